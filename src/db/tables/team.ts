import type { Selectable } from "kysely";
import type { AssignableRole } from "../../domain/permissions.js";
import type { Timestamp } from "./common.js";

/** Tables of migration 0018 (team accounts: invitations, the approvals of a withdrawal request). */

export interface MemberInvitationsTable {
  id: string;
  merchant_id: string;
  email: string;
  member_role: AssignableRole;
  /** SHA-256 of the e-mailed token. */
  token_hash: Buffer | Uint8Array;
  invited_by: string;
  expires_at: Date | string;
  accepted_at: Date | null;
  accepted_by: string | null;
  revoked_at: Date | null;
  created_at: Timestamp;
}

export interface WithdrawalApprovalsTable {
  transaction_id: string;
  /** Who counts as one approval: `user:<id>`, or `api_key` for the whole API-key channel. */
  approver: string;
  actor_type: "user" | "api_key";
  actor_id: string;
  actor_email: string | null;
  created_at: Timestamp;
}

export interface TeamTables {
  member_invitations: MemberInvitationsTable;
  withdrawal_approvals: WithdrawalApprovalsTable;
}

export type MemberInvitation = Selectable<MemberInvitationsTable>;
