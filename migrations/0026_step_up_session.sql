-- Issue #34. (1) An e-mailed code works only in the dashboard session that requested it: another
-- session of the same login (a second sign-in by whoever knows the password, or stole another
-- session) cannot spend it. Codes issued before this migration name no session and match none
-- (they expire within minutes).
alter table dashboard_otps add column session_id text;
create index dashboard_otps_session_idx on dashboard_otps (user_id, purpose, session_id, created_at desc);

-- (2) Security notifications (CONTRACT §6): one row per mail to send, written in the same
-- transaction as the audit record of the event (so a recorded event cannot lose its mail), then
-- sent at once by the process that recorded it, or by any worker once `next_attempt_at` is due.
-- A sender claims a row by moving `next_attempt_at` past its lease (`for update skip locked`:
-- two senders never hold one row) and marks it `sent_at`; a failed send backs off.
create table security_notifications (
  id               bigint generated always as identity primary key,
  -- The audit record of the event (no foreign key: the audit log's retention purge deletes old records).
  audit_id         bigint not null,
  merchant_id      text references merchants (id),
  recipient        text not null,
  subject          text not null,
  body             text not null,
  created_at       timestamptz not null,
  next_attempt_at  timestamptz not null,
  attempts         integer not null default 0,
  last_error       text,
  sent_at          timestamptz,
  -- One mail per person per event.
  unique (audit_id, recipient)
);
create index security_notifications_due_idx on security_notifications (next_attempt_at) where sent_at is null;

-- The process roles of migration 0025: the api records notifications and sends them at once, the
-- worker sends the due ones.
grant select, insert, update, delete on security_notifications to stablegate_api, stablegate_worker;
grant usage, select on sequence security_notifications_id_seq to stablegate_api, stablegate_worker;
