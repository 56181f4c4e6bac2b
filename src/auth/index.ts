/**
 * Dashboard authentication: accounts, sessions, e-mailed codes, TOTP, step-up, and the kit they
 * share (built once by the runtime). Other folders reach this feature through this file only.
 */

export type { DashboardRole, DashboardUser, OtpPurpose, TokenDelivery } from "../db/tables/dashboard.js";
export { ACCESS_TOKEN_TTL_SECONDS, type AccessClaims } from "./access-tokens.js";
export {
  createAdmin,
  createMerchantWithOwner,
  currentUser,
  LOGIN_FAILED,
  LOGIN_THROTTLED,
  login,
  OWNER_PASSWORD_LINK_TTL_MS,
  register,
  type SignedIn,
  type UserProfile,
} from "./accounts.js";
export { currentMembers, findMerchantOwnerId } from "./approvers.js";
export { checkOtp, consumeOtp, requestOtp, spendCheckedOtp } from "./codes.js";
export {
  acceptInvitation,
  INVITATION_TTL_MS,
  type InvitationView,
  inviteMember,
  listInvitations,
  revokeInvitation,
} from "./invitations.js";
export { type AuthKit, type AuthKitDeps, createAuthKit } from "./kit.js";
export {
  changeMemberRole,
  listMembers,
  type MemberActor,
  type MemberView,
  reassignApiKey,
  removeMember,
  transferOwnership,
} from "./members.js";
export { OTP_PURPOSES } from "./otp.js";
export { changePassword, forgotPassword, PASSWORD_RESET_TTL_MS, resetPassword } from "./password-reset.js";
export { issueAccessToken, logout, type RefreshResult, refreshSession } from "./session-flows.js";
export { type ActiveSession, findActiveSession, REFRESH_TOKEN_TTL_SECONDS } from "./sessions.js";
export { checkStepUp, consumeStepUp, type StepUpCodes, type StepUpHolder } from "./step-up.js";
export { disableTotp, enableTotp, setupTotp } from "./two-factor.js";
