-- Database roles per process role (issue #34 finding 1, CONTRACT §9: "each role may connect as its
-- own database role"). One SQL statement made with the api's connection used to queue a transfer
-- from the hot wallet: every role connected as the one user that owns every table. From here on:
--
--   owner (whoever runs `stablegate migrate`)  owns every table and function; only it can ALTER,
--                                              DROP, DISABLE TRIGGER or TRUNCATE.
--   stablegate_worker  reads everything; writes every table but the ledger journal and balances
--                      (only through ledger_post()), the audit log (insert, and the retention
--                      purge's delete), the pinned account keys (insert) and schema_migrations.
--   stablegate_api     reads everything; writes what the API's requests change (accounts, keys,
--                      settings, sessions, checkouts, transactions, approvals, webhooks, mail, the
--                      sandbox chain). It cannot write the sending tables (outgoing_transfers, their
--                      attempts, nonces, wallets), the ledger, what the chain watcher records (a
--                      fake observation would be credited), sweep and reserve records, heartbeats,
--                      nor update or delete the audit log. It creates a withdrawal's or payout's
--                      intent only through request_transfer(), which derives it from the
--                      transaction row and its posted hold; it posts only the hold of its own
--                      withdrawals and payouts and the release of a rejected one; it changes only
--                      pending transaction rows.
--   stablegate_signer  reads what its policy checks (intents, deposit addresses and what arrived
--                      there, transactions, approvals and who made them, the ledger, settings);
--                      writes nothing but the first pin of the account keys.
--
-- These are group roles (NOLOGIN). The login roles the processes use are the operator's:
-- `stablegate db roles` creates one per process role as a member of its group (README,
-- "Production: database roles"). Roles are cluster-wide: the group roles are created once per
-- cluster (tolerating concurrent migrations of several databases), the grants are per database.
-- A later migration that creates a table grants it to these roles in the same file
-- (test/db/database-roles.test.ts fails on a table no role may read).
--
-- Who is "trusted" below (the worker, the owner, a superuser; PGlite's one user) is decided by the
-- login role (`session_user`): a caller that may write `outgoing_transfers` itself gains nothing
-- from the checks, so they bind exactly the callers that cannot (the api).

do $$
declare
  r text;
begin
  foreach r in array array['stablegate_api', 'stablegate_worker', 'stablegate_signer'] loop
    if not exists (select from pg_roles where rolname = r) then
      begin
        execute format('create role %I nologin', r);
      exception when duplicate_object or unique_violation then
        -- Another database of this cluster migrated at the same moment and created it.
        null;
      end;
    end if;
  end loop;
end $$;

-- Nobody but the owner creates objects in the schema (PostgreSQL 15's default; older servers let
-- every role create, e.g. a function shadowing one the owner's functions call).
revoke create on schema public from public;
grant usage on schema public to stablegate_api, stablegate_worker, stablegate_signer;

-- The worker: every table of migrations 0001–0024, then the exceptions.
grant select, insert, update, delete on all tables in schema public to stablegate_worker;
revoke insert, update, delete on ledger_accounts, ledger_postings, ledger_entries, schema_migrations
  from stablegate_worker;
revoke update on audit_log from stablegate_worker;
revoke update, delete on account_keys from stablegate_worker;
grant usage, select on all sequences in schema public to stablegate_worker;

-- The api: read everything, write what requests change.
grant select on all tables in schema public to stablegate_api;
grant insert, update, delete on
  merchants, merchant_settings, api_keys,
  dashboard_users, dashboard_sessions, dashboard_refresh_tokens, dashboard_otps,
  dashboard_password_resets, login_throttles, member_invitations, mail_outbox, idempotency_keys,
  checkout_sessions, deposit_wallets, watched_addresses,
  webhook_endpoints, webhook_events, webhook_due, webhook_attempts,
  sim_chains, sim_blocks, sim_transactions, chain_providers
  to stablegate_api;
grant insert, update on transactions to stablegate_api;
grant insert, delete on withdrawal_approvals to stablegate_api;
grant insert on audit_log, account_keys to stablegate_api;
grant usage, select on all sequences in schema public to stablegate_api;

-- The signer: what its policy reads (the evidence of `src/signer/evidence.ts`); of the members and
-- key pairs only who they are, never their credentials.
grant select on
  outgoing_transfers, outgoing_transfer_attempts, sender_nonces, sending_wallets, watched_addresses,
  chain_observations, account_keys, transactions, withdrawal_approvals, merchants, merchant_settings,
  ledger_accounts, ledger_postings, ledger_entries, schema_migrations
  to stablegate_signer;
grant select (id, merchant_id, email, role, member_role, removed_at) on dashboard_users to stablegate_signer;
grant select (id, merchant_id, environment, created_by, status, created_at, revoked_at) on api_keys to stablegate_signer;
grant insert on account_keys to stablegate_signer;

-- The ledger is written only through ledger_post(), which runs as the owner. The function of
-- 0016/0022/0023 keeps its body under another name (callable by the owner only); ledger_post() in
-- front of it checks what an untrusted caller (the api) may post: the hold of a withdrawal or payout
-- of its own merchant for exactly its amount, and the release of a rejected withdrawal's hold.
-- Deposits and settlements come from the worker. The commit-time check runs as the owner too (it
-- raises deposit balances, which no app role may update).
alter function ledger_post(text, text, text, text, text, text, text[], numeric[]) rename to ledger_post_unchecked;
revoke all on function ledger_post_unchecked(text, text, text, text, text, text, text[], numeric[]) from public;

create function ledger_post(
  p_business_key text,
  p_kind text,
  p_environment text,
  p_currency_type text,
  p_merchant text,
  p_transaction_id text,
  p_accounts text[],
  p_amounts numeric[]
) returns table (r_status text, r_posting_id text, r_kind text, r_balance text, r_needed text)
language plpgsql security definer set search_path = public, pg_temp as $$
declare
  t record;
  taken text;
  given text;
begin
  if not has_table_privilege(session_user, 'public.outgoing_transfers', 'INSERT') then
    select x.type, x.status, x.merchant_id, x.environment, x.currency_type, x.amount into t
    from transactions x where x.id = p_transaction_id;
    if p_kind = 'hold' then
      taken := 'available';
      given := 'held';
    elsif p_kind = 'release' then
      taken := 'held';
      given := 'available';
    end if;
    if taken is null
      or t is null
      or t.merchant_id is distinct from p_merchant
      or t.environment is distinct from p_environment
      or t.currency_type is distinct from p_currency_type
      or not (
        (p_kind = 'hold' and t.type in ('withdrawal', 'payout') and t.status in ('pending', 'processing')
          and p_business_key = 'hold:' || p_transaction_id)
        or (p_kind = 'release' and t.type = 'withdrawal' and t.status = 'rejected'
          and p_business_key = 'hold-close:' || p_transaction_id))
      or cardinality(p_accounts) is distinct from 2
      or cardinality(p_amounts) is distinct from 2
      or p_amounts[array_position(p_accounts, taken)] is distinct from -t.amount
      or p_amounts[array_position(p_accounts, given)] is distinct from t.amount
    then
      raise exception 'ledger_post %: the % posting is not this role''s to make', p_business_key, p_kind
        using errcode = 'insufficient_privilege';
    end if;
  end if;
  return query select * from ledger_post_unchecked(p_business_key, p_kind, p_environment, p_currency_type,
    p_merchant, p_transaction_id, p_accounts, p_amounts);
end $$;
revoke all on function ledger_post(text, text, text, text, text, text, text[], numeric[]) from public;
grant execute on function ledger_post(text, text, text, text, text, text, text[], numeric[])
  to stablegate_api, stablegate_worker;

alter function ledger_check_posting_balanced() security definer set search_path = public, pg_temp;

-- A transfer intent (`src/sender/intents.ts`). A caller that may insert intents itself (the worker's
-- sweeps, gas top-ups and cold forwards; the owner) gets exactly that insert. Any other (the api,
-- executing a withdrawal or payout inside its request) gets an intent only for a withdrawal or
-- payout transaction that is `processing`, from the hot wallet (index 0), to the transaction's
-- destination, for its net amount, on its chain, with its hold posted and still open.
create function request_transfer(
  p_intent_id text,
  p_kind text,
  p_network text,
  p_environment text,
  p_asset text,
  p_from_index integer,
  p_to text,
  p_amount numeric,
  p_after_intent_id text
) returns void
language plpgsql security definer set search_path = public, pg_temp as $$
declare
  t record;
  held numeric;
begin
  if not has_table_privilege(session_user, 'public.outgoing_transfers', 'INSERT') then
    select x.type, x.status, x.currency_type, x.environment, x.wallet_address, x.amount, x.net_amount into t
    from transactions x where x.id = p_intent_id;
    select sum(e.amount) into held
    from ledger_postings p
    join ledger_entries e on e.posting_id = p.id
    join ledger_accounts a on a.id = e.account_id
    where p.business_key = 'hold:' || p_intent_id and p.kind = 'hold' and a.kind = 'held';
    if p_kind not in ('withdrawal', 'payout')
      or p_asset is distinct from 'token'
      or p_from_index is distinct from 0
      or p_after_intent_id is not null
      or t is null
      or t.type is distinct from p_kind
      or t.status is distinct from 'processing'
      or t.currency_type is distinct from p_network
      or t.environment is distinct from p_environment
      or t.wallet_address is distinct from p_to
      or t.net_amount is distinct from p_amount
      or held is distinct from t.amount
      or exists (select from ledger_postings c where c.business_key = 'hold-close:' || p_intent_id)
    then
      raise exception 'request_transfer %: no processing % with this destination, net amount and an open hold',
        p_intent_id, p_kind using errcode = 'insufficient_privilege';
    end if;
  end if;
  insert into outgoing_transfers
    (intent_id, kind, network, environment, asset, from_index, from_address, to_address, amount, after_intent_id)
  values
    (p_intent_id, p_kind, p_network, p_environment, p_asset, p_from_index, null, p_to, p_amount, p_after_intent_id)
  on conflict (intent_id) do nothing;
  perform pg_notify('stablegate_transfers', '');
end $$;
revoke all on function request_transfer(text, text, text, text, text, integer, text, numeric, text) from public;
grant execute on function request_transfer(text, text, text, text, text, integer, text, numeric, text)
  to stablegate_api, stablegate_worker;

-- The api changes only pending transactions (approve, reject), never their money fields, and creates
-- them pending or processing. No app role deletes one (the ledger and the intents name them).
create function transactions_guard() returns trigger language plpgsql as $$
begin
  if has_table_privilege(session_user, 'public.outgoing_transfers', 'INSERT') then
    return new;
  end if;
  if tg_op = 'INSERT' then
    if new.status in ('pending', 'processing') then
      return new;
    end if;
  elsif old.status = 'pending'
    and new.status in ('pending', 'processing', 'rejected')
    and (new.id, new.merchant_id, new.environment, new.type, new.currency_type, new.amount, new.fee,
         new.wallet_address, new.blockchain_tx_hash, new.confirmed_at)
        is not distinct from
        (old.id, old.merchant_id, old.environment, old.type, old.currency_type, old.amount, old.fee,
         old.wallet_address, old.blockchain_tx_hash, old.confirmed_at)
  then
    return new;
  end if;
  raise exception 'this role changes only pending transactions (% of a % one)', tg_op,
    coalesce(old.status, new.status) using errcode = 'insufficient_privilege';
end $$;
create trigger transactions_guard before insert or update on transactions
  for each row execute function transactions_guard();
revoke delete on transactions from stablegate_worker;
