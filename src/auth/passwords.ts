import { randomBytes } from "node:crypto";
import { hash, type Options, verify } from "@node-rs/argon2";
import type { FieldError } from "../domain/errors.js";

/**
 * Passwords: argon2id (OWASP's recommended parameters: 19 MiB, 2 passes, 1 lane). `Algorithm` is
 * an ambient const enum that `isolatedModules` cannot read, hence the literal 2 (= Argon2id).
 */
const ARGON2ID: Options = {
  algorithm: 2 as Options["algorithm"],
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
};

export const PASSWORD_MIN = 10;
export const PASSWORD_MAX = 256;

export function validatePassword(password: string, field = "password"): FieldError[] {
  if (password.length < PASSWORD_MIN)
    return [{ field, message: `must be at least ${PASSWORD_MIN} characters` }];
  if (password.length > PASSWORD_MAX)
    return [{ field, message: `must be at most ${PASSWORD_MAX} characters` }];
  return [];
}

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2ID);
}

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}

let dummy: Promise<string> | undefined;

/**
 * Spends the same work as a real check when the e-mail is unknown (or the account is locked), so
 * that response times do not tell whether an account exists.
 */
export async function burnPasswordCheck(password: string): Promise<false> {
  dummy ??= hashPassword(randomBytes(16).toString("hex"));
  await verifyPassword(await dummy, password);
  return false;
}
