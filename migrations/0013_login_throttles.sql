-- Failed sign-ins, throttled per (account, client IP) and per client IP (security issue 18,
-- finding 10). The account itself is never locked: someone else's failures must not keep the
-- owner out. A table, so that every api instance sees the same counts (the rate-limit store is
-- in memory without Redis).
--
-- subject: '*' for the per-IP budget across all accounts, else the SHA-256 (hex) of the
--          normalised e-mail that was tried — whether or not an account has it (no enumeration,
--          no address in clear).
-- ip:      the client address (request.ip).
-- failures counts consecutive failures; it starts again once the row has been quiet for its
-- forget period. locked_until: no attempt of that subject from that IP until then.
create table login_throttles (
  subject          text not null,
  ip               text not null,
  failures         integer not null check (failures > 0),
  last_failure_at  timestamptz not null,
  locked_until     timestamptz,
  primary key (subject, ip)
);
-- The pruning of quiet rows (done a few at a time by the failures that write new ones).
create index login_throttles_last_failure_idx on login_throttles (last_failure_at);

comment on column dashboard_users.failed_logins is 'unused since 0013 (login_throttles); to be dropped';
comment on column dashboard_users.locked_until is 'unused since 0013 (login_throttles); to be dropped';
