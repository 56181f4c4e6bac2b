import { randomBytes } from "node:crypto";
import type { AuditRecorder } from "../audit/index.js";
import type { Db } from "../db/database.js";
import type { DashboardUser, TokenDelivery } from "../db/tables/dashboard.js";
import { AppError, type FieldError } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import { type CreatedMerchant, createMerchantWithKeys, findMerchantById } from "../merchants/index.js";
import type { AuthKit } from "./kit.js";
import { recordFailure, recordSuccess, type ThrottleKeys, throttledForMs, throttleKeys } from "./lockout.js";
import { issuePasswordToken } from "./password-tokens.js";
import { burnPasswordCheck, hashPassword, validatePassword, verifyPassword } from "./passwords.js";
import { createSession, type NewSession } from "./sessions.js";
import { acceptTotp } from "./totp.js";
import { findUserByEmail, findUserById, insertUser } from "./users.js";

/**
 * Dashboard accounts (docs/decisions/dashboard.md#dashboard-channel): registration, sign-in with progressive lockout and optional
 * TOTP, the signed-in user's profile, operator-created admins. Password reset and change are in
 * `password-reset.ts`, e-mailed codes in `codes.ts`, TOTP enrolment in `two-factor.ts`, refresh and
 * sign-out in `session-flows.ts`.
 */

export const LOGIN_FAILED = "Invalid e-mail or password.";

export const LOGIN_THROTTLED =
  "Too many failed sign-ins from your address; retry after the number of seconds in Retry-After.";

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** A dashboard user and the company name of its merchant (none for an admin). */
export interface UserProfile {
  user: DashboardUser;
  companyName: string | null;
}

export interface SignedIn {
  user: DashboardUser;
  session: NewSession;
  accessToken: string;
  /** Whether the client asked for the access token in the body too (`X-Token-Delivery: bearer`). */
  tokenDelivery: TokenDelivery;
  /** The user as read back after sign-in, for the response. */
  profile: UserProfile;
}

/** The signed-in user's profile (`GET /api/v1/auth/me`); 401 when the user is gone. */
export async function currentUser(kit: AuthKit, userId: string): Promise<UserProfile> {
  const user = await findUserById(kit.db, userId);
  if (!user) throw AppError.invalidAuth();
  const merchant = user.merchant_id ? await findMerchantById(kit.db, user.merchant_id) : undefined;
  return { user, companyName: merchant?.company_name ?? null };
}

/** A new session and access token for a login that proved who it is. */
export async function signIn(
  kit: AuthKit,
  user: DashboardUser,
  tokenDelivery: TokenDelivery,
  audit?: AuditRecorder,
): Promise<SignedIn> {
  // The sign-in's record names the user: the request had no principal yet.
  const signedIn: AuditRecorder | undefined = audit && {
    record: (trx) =>
      audit.record(trx, {
        actor: {
          type: "user",
          id: user.id,
          email: user.email,
          role: user.role === "admin" ? "platform_admin" : user.member_role,
          merchantId: user.merchant_id,
        },
      }),
  };
  const session = await createSession(kit.db, user.id, kit.now(), tokenDelivery, signedIn);
  const accessToken = await kit.tokens.sign({
    userId: user.id,
    sessionId: session.sessionId,
    role: user.role,
    merchantId: user.merchant_id,
  });
  return { user, session, accessToken, tokenDelivery, profile: await currentUser(kit, user.id) };
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
    // Whoever registers a merchant owns it (issue #21).
    (trx, merchantId) => insertOwner(trx, { id: userId, merchantId, email: input.email, passwordHash, now }),
    // The webhook secret of each environment is created (sealed) at registration (docs/api-reference.md#register).
    kit.box,
  );
  const user = await findUserById(kit.db, userId);
  if (!user) throw new Error("registered user vanished");
  return { ...(await signIn(kit, user, tokenDelivery)), merchant };
}

/** Refuses an attempt its (account, IP) or IP budget is locked for: 429 with Retry-After. */
export async function assertNotThrottled(kit: AuthKit, keys: ThrottleKeys, now: Date): Promise<void> {
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
  audit?: AuditRecorder,
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
  return signIn(kit, user, tokenDelivery, audit);
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
      memberRole: null,
      now: new Date(),
    });
  } catch (err) {
    if ((err as { code?: string }).code === "23505") throw taken();
    throw err;
  }
  return { id, email, role: "admin" };
}

/** How long the link printed by `merchant create` sets the owner's first password. */
export const OWNER_PASSWORD_LINK_TTL_MS = 72 * 60 * 60_000;

/**
 * Operator command (`stablegate merchant create`): a merchant with its key pairs and its owner's
 * dashboard login, like a registration (the pairs act for the owner, docs/permissions.md). With `password`
 * the owner signs in with it; without, the login has no usable password and `passwordToken` sets
 * the first one (`/reset-password`, valid 72 h): the operator hands the link to the merchant.
 */
export async function createMerchantWithOwner(
  db: Db,
  input: { email: string; companyName: string; password?: string },
  now: Date,
): Promise<{ merchant: CreatedMerchant; ownerId: string; passwordToken: string | null }> {
  if (input.password !== undefined) {
    const errors = validatePassword(input.password);
    if (errors.length > 0) throw AppError.validation(errors);
  }
  // No password given: a hash of 32 random bytes nobody knows, so the login is unusable until set.
  const passwordHash = await hashPassword(input.password ?? randomBytes(32).toString("base64url"));
  const ownerId = newId("usr");
  let passwordToken: string | null = null;
  const merchant = await createMerchantWithKeys(db, input, async (trx, merchantId) => {
    await insertOwner(trx, { id: ownerId, merchantId, email: input.email, passwordHash, now });
    if (input.password === undefined)
      passwordToken = await issuePasswordToken(trx, ownerId, now, OWNER_PASSWORD_LINK_TTL_MS);
  });
  return { merchant, ownerId, passwordToken };
}

/** The owner's login of a merchant being created (registration and `merchant create`). */
function insertOwner(
  trx: Db,
  u: { id: string; merchantId: string; email: string; passwordHash: string; now: Date },
): Promise<void> {
  return insertUser(trx, { ...u, email: u.email.trim(), role: "merchant", memberRole: "owner" });
}
