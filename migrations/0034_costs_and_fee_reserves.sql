-- Costs in the books (issue #38, part 3): `/metrics` reads this month's finished transfers with a
-- recorded cost (`stablegate_chain_fees_month`), and `stablegate chain costs` the last months. An
-- index on when they finished, only over the rows that carry a cost.
create index outgoing_transfers_costs_idx on outgoing_transfers (finished_at) where fee_paid is not null;

-- Reserves count the native coin held for fees and stake (issue #38, part 3): the energy engine
-- records the resource account's liquid TRX and its staked TRX (energy and bandwidth) beside the
-- hot wallet's and gas tank's balances the sender records.
alter table sending_wallets drop constraint sending_wallets_role_check;
alter table sending_wallets add constraint sending_wallets_role_check
  check (role in ('hot_wallet', 'gas_tank', 'resource_account'));
alter table sending_wallets add column staked_balance numeric(38,0) check (staked_balance >= 0);
