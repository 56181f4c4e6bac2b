-- Payments judged by the chain (issue 19): the watcher records transfers as soon as they are in a
-- block, with the block's timestamp, and follows them until they are confirmed or reorganised away.
--
-- chain_observations.block_time: the timestamp of the transfer's block, from the chain (never the
-- worker's clock). A transfer counts for its checkout session when block_time < expires_at. Rows
-- written before this migration were all confirmed when stored; they keep block_time null (their
-- observed_at stands in for it).
alter table chain_observations add column block_time timestamptz;

-- chain_cursors.chain_time: the timestamp of the newest block the watcher has stored (its cursor
-- block). Block timestamps never go back, so every transfer not stored yet will carry a block time
-- at or after it: a session whose expires_at <= chain_time can no longer be paid in time.
alter table chain_cursors add column chain_time timestamptz;

-- Underpayment tolerance per merchant and environment, in basis points of the amount (0 .. 10 %).
alter table merchant_settings
  add column underpayment_tolerance_bp integer not null default 0
    check (underpayment_tolerance_bp between 0 and 1000);

-- Deposit fee and netAmount describe what was credited (CONTRACT §4.1): a closed deposit's
-- net_amount is actual_balance − fee (a partial, exact or over payment, and 0 for a session that
-- received nothing), the amount its ledger posting put on the available balance. An open session
-- shows the expected amount − fee. Withdrawals and payouts keep net_amount = amount − fee.
do $$
declare
  c text;
begin
  select conname into c from pg_constraint
   where conrelid = 'transactions'::regclass and contype = 'c'
     and pg_get_constraintdef(oid) ilike '%net_amount = (amount - fee)%';
  if c is not null then
    execute format('alter table transactions drop constraint %I', c);
  end if;
end $$;

update transactions
   set net_amount = coalesce(actual_balance, amount) - fee
 where type = 'deposit' and status <> 'pending' and net_amount <> coalesce(actual_balance, amount) - fee;

alter table transactions add constraint transactions_net_amount_check check (
  case
    when type = 'deposit' and status <> 'pending' then net_amount = coalesce(actual_balance, amount) - fee
    else net_amount = amount - fee
  end
);
