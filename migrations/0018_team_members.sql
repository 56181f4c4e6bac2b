-- Team accounts (issue #21): a merchant has members, each with one role; the owner invites by
-- e-mail; a withdrawal above the merchant's dual-approval threshold needs two approvers.

-- The member's role in its merchant. Platform admins (role 'admin', no merchant) have none.
-- Every existing merchant login owns its merchant.
alter table dashboard_users
  add column member_role text check (member_role in ('owner', 'admin', 'developer', 'finance', 'viewer')),
  -- A removed member: it can no longer sign in, its sessions were ended. The row stays (the audit
  -- log and the approvals name it); its e-mail is free to be invited again.
  add column removed_at timestamptz;
update dashboard_users set member_role = 'owner' where role = 'merchant';
alter table dashboard_users
  add constraint dashboard_users_member_role_check2 check ((role = 'merchant') = (member_role is not null));

-- One login per e-mail among the logins in use; one owner per merchant (was: one login per merchant).
drop index dashboard_users_email_key;
create unique index dashboard_users_email_key on dashboard_users (lower(email)) where removed_at is null;
drop index dashboard_users_merchant_key;
create unique index dashboard_users_owner_key on dashboard_users (merchant_id)
  where member_role = 'owner' and removed_at is null;
create index dashboard_users_members_idx on dashboard_users (merchant_id, created_at) where merchant_id is not null;

alter table dashboard_sessions drop constraint dashboard_sessions_revoked_reason_check;
alter table dashboard_sessions add constraint dashboard_sessions_revoked_reason_check
  check (revoked_reason in ('logout', 'reuse', 'password_change', 'password_reset', 'member_removed'));

-- Invitations: SHA-256 of the e-mailed token, single use, 7 days, revocable.
create table member_invitations (
  id           text primary key,
  merchant_id  text not null references merchants (id),
  email        text not null,
  member_role  text not null check (member_role in ('admin', 'developer', 'finance', 'viewer')),
  token_hash   bytea not null unique,
  invited_by   text not null references dashboard_users (id),
  expires_at   timestamptz not null,
  accepted_at  timestamptz,
  accepted_by  text references dashboard_users (id),
  revoked_at   timestamptz,
  created_at   timestamptz not null default now(),
  check (accepted_at is null or revoked_at is null)
);
create index member_invitations_merchant_idx on member_invitations (merchant_id, created_at desc);

-- Four-eyes: per currency type, base units as decimal strings; a missing currency = off.
alter table merchant_settings add column dual_approval_threshold jsonb not null default '{}'::jsonb;

-- The approvals a withdrawal request collected. `approver` is who counts as one approval: a
-- member (`user:<id>`) or the API-key channel as a whole (`api_key`). The primary key makes a
-- second approval by the same approver impossible, whatever the race.
create table withdrawal_approvals (
  transaction_id  text not null references transactions (id),
  approver        text not null,
  actor_type      text not null check (actor_type in ('user', 'api_key')),
  actor_id        text not null,
  actor_email     text,
  created_at      timestamptz not null default now(),
  primary key (transaction_id, approver)
);
