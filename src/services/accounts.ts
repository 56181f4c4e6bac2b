import { createHash, randomBytes } from "node:crypto";
import type { AuthKit } from "../auth/kit.js";
import {
  clearAccount,
  recordFailure,
  recordSuccess,
  type ThrottleKeys,
  throttledForMs,
  throttleKeys,
} from "../auth/lockout.js";
import { burnPasswordCheck, hashPassword, validatePassword, verifyPassword } from "../auth/passwords.js";
import { createSession, type NewSession, revokeUserSessions } from "../auth/sessions.js";
import { acceptTotp, newTotpSecret, totpQrDataUrl, totpUri } from "../auth/totp.js";
import { findUserByEmail, findUserById, insertUser, setPassword } from "../auth/users.js";
import type { Db } from "../db/database.js";
import type { DashboardUser, OtpPurpose, TokenDelivery } from "../db/tables/dashboard.js";
import { AppError, type FieldError } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import { type CreatedMerchant, createMerchantWithKeys } from "./merchants.js";

/**
 * Dashboard accounts (CONTRACT §6): registration, sign-in with progressive lockout and optional
 * TOTP, password reset and change, e-mailed OTPs, TOTP enrolment, operator-created admins.
 */

export const LOGIN_FAILED = "Invalid e-mail or password.";
export const LOGIN_THROTTLED =
  "Too many failed sign-ins from your address; retry after the number of seconds in Retry-After.";
export const PASSWORD_RESET_TTL_MS = 60 * 60_000;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export interface SignedIn {
  user: DashboardUser;
  session: NewSession;
  accessToken: string;
  /** Whether the client asked for the access token in the body too (`X-Token-Delivery: bearer`). */
  tokenDelivery: TokenDelivery;
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

async function signIn(kit: AuthKit, user: DashboardUser, tokenDelivery: TokenDelivery): Promise<SignedIn> {
  const session = await createSession(kit.db, user.id, kit.now(), tokenDelivery);
  const accessToken = await kit.tokens.sign({
    userId: user.id,
    sessionId: session.sessionId,
    role: user.role,
    merchantId: user.merchant_id,
  });
  return { user, session, accessToken, tokenDelivery };
}

export async function issueAccessToken(kit: AuthKit, userId: string, sessionId: string): Promise<string> {
  const user = await findUserById(kit.db, userId);
  if (!user) throw AppError.invalidAuth("Missing or invalid dashboard session.");
  return kit.tokens.sign({ userId, sessionId, role: user.role, merchantId: user.merchant_id });
}

export async function register(
  kit: AuthKit,
  input: { email: string; password: string; companyName: string },
  tokenDelivery: TokenDelivery = "cookie",
): Promise<SignedIn & { merchant: CreatedMerchant }> {
  const errors = validatePassword(input.password);
  if (errors.length > 0) throw AppError.validation(errors);
  const passwordHash = await hashPassword(input.password);
  const userId = newId("usr");
  const now = kit.now();
  const merchant = await createMerchantWithKeys(
    kit.db,
    input,
    (trx, merchantId) =>
      insertUser(trx, {
        id: userId,
        merchantId,
        email: input.email.trim(),
        passwordHash,
        role: "merchant",
        now,
      }),
    // The webhook secret of each environment is created (sealed) at registration (SPEC §2.1).
    kit.box,
  );
  const user = await findUserById(kit.db, userId);
  if (!user) throw new Error("registered user vanished");
  return { ...(await signIn(kit, user, tokenDelivery)), merchant };
}

/** Refuses an attempt its (account, IP) or IP budget is locked for: 429 with Retry-After. */
async function assertNotThrottled(kit: AuthKit, keys: ThrottleKeys, now: Date): Promise<void> {
  const waitMs = await throttledForMs(kit.db, keys, now);
  if (waitMs > 0) throw AppError.rateLimited(LOGIN_THROTTLED, Math.ceil(waitMs / 1000));
}

/**
 * Sign-in from the client `ip` (its address; an IPv6 client's /64). Failures are throttled per (e-mail, IP) and per IP
 * (`auth/lockout.ts`), never per account: a throttled attempt is 429 before any password check.
 * Every credential failure gives the same 401 and costs the same argon2 work whether the e-mail
 * exists or the password is wrong. A correct password on an account with 2FA and no (or a wrong)
 * `totp` gives 401 with `details.totpRequired`.
 */
export async function login(
  kit: AuthKit,
  input: { email: string; password: string; totp?: string | undefined },
  ip: string,
  tokenDelivery: TokenDelivery = "cookie",
): Promise<SignedIn> {
  const now = kit.now();
  const keys = throttleKeys(input.email, ip);
  await assertNotThrottled(kit, keys, now);
  const user = await findUserByEmail(kit.db, input.email);
  if (!user) {
    await burnPasswordCheck(input.password);
    await recordFailure(kit.db, keys, now);
    throw AppError.invalidAuth(LOGIN_FAILED);
  }
  if (!(await verifyPassword(user.password_hash, input.password))) {
    await recordFailure(kit.db, keys, now);
    throw AppError.invalidAuth(LOGIN_FAILED);
  }
  if (user.totp_enabled) {
    if (!input.totp) {
      throw new AppError("INVALID_AUTH", "A two-factor code (totp) is required.", { totpRequired: true });
    }
    const step = await acceptTotp(kit, user, input.totp);
    if (step === null) {
      await recordFailure(kit.db, keys, now);
      throw new AppError("INVALID_AUTH", "Invalid two-factor code.", { totpRequired: true });
    }
  }
  await recordSuccess(kit.db, keys);
  return signIn(kit, user, tokenDelivery);
}

/** Always succeeds, whether or not the e-mail has an account (no account enumeration). */
export async function forgotPassword(
  kit: AuthKit,
  email: string,
  resetUrl: (token: string) => string,
): Promise<void> {
  const user = await findUserByEmail(kit.db, email);
  if (!user) return;
  const token = `prt_${randomBytes(32).toString("base64url")}`;
  const now = kit.now();
  await kit.db
    .insertInto("dashboard_password_resets")
    .values({
      token_hash: sha256(token),
      user_id: user.id,
      expires_at: new Date(now.getTime() + PASSWORD_RESET_TTL_MS),
      used_at: null,
      created_at: now,
    })
    .execute();
  // Sent in the background: the response time must not depend on whether the account exists.
  kit.mailer
    .send({
      to: user.email,
      subject: "Reset your stablegate password",
      text: [
        "Someone (hopefully you) asked to reset the password of your stablegate account.",
        "",
        `Reset it here within 60 minutes: ${resetUrl(token)}`,
        "",
        `Or use this reset token: ${token}`,
        "",
        "If you did not ask for this, ignore this mail; your password stays unchanged.",
      ].join("\n"),
    })
    .catch((err: unknown) => kit.logger.error({ err }, "password reset mail not sent"));
}

/** Sets a new password with a mailed token; the account's sign-in throttles start again. */
export async function resetPassword(kit: AuthKit, token: string, newPassword: string): Promise<void> {
  const errors = validatePassword(newPassword, "newPassword");
  if (errors.length > 0) throw AppError.validation(errors);
  const invalid = () => AppError.validation([{ field: "token", message: "is invalid, used or expired" }]);
  if (!token.startsWith("prt_") || token.length > 100) throw invalid();
  const passwordHash = await hashPassword(newPassword);
  const now = kit.now();
  await kit.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable("dashboard_password_resets")
      .set({ used_at: now })
      .where("token_hash", "=", sha256(token))
      .where("used_at", "is", null)
      .where("expires_at", ">", now)
      .returning("user_id")
      .executeTakeFirst();
    if (!row) throw invalid();
    await setPassword(trx, row.user_id, passwordHash, now);
    // Whoever knew the old password is out: every session ends.
    await revokeUserSessions(trx, row.user_id, "password_reset", now);
    const user = await findUserById(trx, row.user_id);
    if (user) await clearAccount(trx, user.email);
  });
}

export async function requestOtp(
  kit: AuthKit,
  userId: string,
  purpose: OtpPurpose,
): Promise<{ expiresAt: Date }> {
  const user = await findUserById(kit.db, userId);
  if (!user) throw AppError.invalidAuth();
  const { code, expiresAt } = await kit.otp.issue(user.id, purpose, kit.now());
  const minutes = Math.round(kit.config.otpTtlSeconds / 60);
  const action = {
    payout: "confirm a payout",
    password_change: "change your password",
    sensitive: "confirm a sensitive change (API keys, settings, webhooks or two-factor authentication)",
  }[purpose];
  await kit.mailer.send({
    to: user.email,
    subject: `Your stablegate code: ${code}`,
    text: [
      `Your one-time code to ${action} is: ${code}`,
      "",
      `It is valid for ${minutes} minutes and can be used once. Never share it.`,
      "If you did not ask for it, change your password.",
    ].join("\n"),
  });
  return { expiresAt };
}

/** Checks and consumes an OTP of a purpose; throws 400 on `field` when it does not match. */
export async function consumeOtp(
  kit: AuthKit,
  userId: string,
  purpose: OtpPurpose,
  code: string,
  field = "otp",
): Promise<void> {
  if (!(await kit.otp.verify(userId, purpose, code, kit.now()))) {
    throw invalidOtp(field);
  }
}

function invalidOtp(field: string): AppError {
  return AppError.validation([{ field, message: "is invalid, expired or already used; request a new code" }]);
}

/**
 * Checks an e-mailed code for an action that runs later in its own transaction (a payout): the
 * code's id, to be spent there with `spendCheckedOtp`. A wrong code costs a try and is refused
 * here; a right one stays usable until the action commits.
 */
export async function checkOtp(
  kit: AuthKit,
  userId: string,
  purpose: OtpPurpose,
  code: string,
  field = "otp",
): Promise<string> {
  const id = await kit.otp.check(userId, purpose, code, kit.now());
  if (id === null) {
    throw invalidOtp(field);
  }
  return id;
}

/**
 * Spends a code checked by `checkOtp` in the action's transaction: if the action fails, the
 * rollback leaves the code usable; of two actions racing with one code, one runs.
 */
export async function spendCheckedOtp(kit: AuthKit, trx: Db, id: string, field = "otp"): Promise<void> {
  if (!(await kit.otp.consume(trx, id, kit.now()))) {
    throw invalidOtp(field);
  }
}

/**
 * Changes the password of a signed-in user at client address `ip`. A wrong current password counts
 * in the same throttles as a failed sign-in (a stolen session must not become a password oracle).
 */
export async function changePassword(
  kit: AuthKit,
  userId: string,
  currentSessionId: string,
  input: { currentPassword: string; newPassword: string; otp: string },
  ip: string,
): Promise<void> {
  const user = await findUserById(kit.db, userId);
  if (!user) throw AppError.invalidAuth();
  const errors = validatePassword(input.newPassword, "newPassword");
  if (errors.length > 0) throw AppError.validation(errors);
  const now = kit.now();
  const keys = throttleKeys(user.email, ip);
  await assertNotThrottled(kit, keys, now);
  if (!(await verifyPassword(user.password_hash, input.currentPassword))) {
    await recordFailure(kit.db, keys, now);
    throw AppError.validation([{ field: "currentPassword", message: "is not the current password" }]);
  }
  await consumeOtp(kit, user.id, "password_change", input.otp);
  const passwordHash = await hashPassword(input.newPassword);
  await kit.db.transaction().execute(async (trx) => {
    await setPassword(trx, user.id, passwordHash, now);
    // Every other sign-in ends; the one that changed the password (it proved the current
    // password and an e-mailed code) stays.
    await revokeUserSessions(trx, user.id, "password_change", now, currentSessionId);
  });
}

export async function setupTotp(
  kit: AuthKit,
  userId: string,
): Promise<{ secret: string; otpauthUri: string; qrCode: string }> {
  const user = await findUserById(kit.db, userId);
  if (!user) throw AppError.invalidAuth();
  if (user.totp_enabled) throw new AppError("INVALID_STATE", "Two-factor authentication is already enabled.");
  const secret = newTotpSecret();
  await kit.db
    .updateTable("dashboard_users")
    .set({
      totp_secret: kit.box.seal(secret, `totp:${user.id}`),
      totp_last_step: null,
      updated_at: kit.now(),
    })
    .where("id", "=", user.id)
    .where("totp_enabled", "=", false)
    .execute();
  const otpauthUri = totpUri(secret, user.email);
  return { secret, otpauthUri, qrCode: await totpQrDataUrl(otpauthUri) };
}

export async function enableTotp(kit: AuthKit, userId: string, code: string): Promise<void> {
  const user = await findUserById(kit.db, userId);
  if (!user) throw AppError.invalidAuth();
  if (user.totp_enabled) throw new AppError("INVALID_STATE", "Two-factor authentication is already enabled.");
  if (!user.totp_secret) throw new AppError("INVALID_STATE", "Call /api/v1/auth/2fa/setup first.");
  if ((await acceptTotp(kit, user, code)) === null) throw invalidCode();
  await kit.db
    .updateTable("dashboard_users")
    .set({ totp_enabled: true, updated_at: kit.now() })
    .where("id", "=", user.id)
    .execute();
}

/**
 * Turns TOTP off. The route's step-up (CONTRACT §6.1: an e-mailed `sensitive` code and the current
 * TOTP code, `auth/step-up.ts`) has authorised it before this runs.
 */
export async function disableTotp(kit: AuthKit, userId: string): Promise<void> {
  const user = await findUserById(kit.db, userId);
  if (!user) throw AppError.invalidAuth();
  if (!user.totp_enabled) throw new AppError("INVALID_STATE", "Two-factor authentication is not enabled.");
  await kit.db
    .updateTable("dashboard_users")
    .set({ totp_enabled: false, totp_secret: null, totp_last_step: null, updated_at: kit.now() })
    .where("id", "=", user.id)
    .execute();
}

function invalidCode(): AppError {
  return AppError.validation([{ field: "code", message: "is not a valid, unused authenticator code" }]);
}

/** Operator command: a platform admin (read-only dashboard role). */
export async function createAdmin(
  db: Db,
  input: { email: string; password: string },
): Promise<{ id: string; email: string; role: "admin" }> {
  const email = input.email.trim();
  const errors: FieldError[] = [];
  if (email.length > 254 || !EMAIL.test(email))
    errors.push({ field: "email", message: "must be an e-mail address" });
  errors.push(...validatePassword(input.password));
  if (errors.length > 0) throw AppError.validation(errors);
  const taken = () => AppError.validation([{ field: "email", message: "is already registered" }]);
  if (await findUserByEmail(db, email)) throw taken();
  const id = newId("adm");
  try {
    await insertUser(db, {
      id,
      merchantId: null,
      email,
      passwordHash: await hashPassword(input.password),
      role: "admin",
      now: new Date(),
    });
  } catch (err) {
    if ((err as { code?: string }).code === "23505") throw taken();
    throw err;
  }
  return { id, email, role: "admin" };
}
