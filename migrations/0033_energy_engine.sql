-- The TRON energy engine (issue #38, docs/decisions/tron-resources.md): the resource account
-- (index 2) stakes TRX for energy and bandwidth, delegates the energy a sweep needs to its deposit
-- address just before the sweep is signed, and takes it back right after. Each step is an ordinary
-- outgoing transfer (same crash safety): `resource_stake` (the resource account's own TRX staked),
-- `resource_delegation` and `resource_reclaim`. Their asset is the resource staked or delegated
-- (`energy`, `bandwidth`), their amount the TRX (sun) behind it.
alter table outgoing_transfers drop constraint outgoing_transfers_kind_check;
alter table outgoing_transfers add constraint outgoing_transfers_kind_check
  check (kind in ('withdrawal', 'payout', 'sweep', 'gas_topup', 'cold_forward', 'return',
                  'resource_stake', 'resource_delegation', 'resource_reclaim'));
alter table outgoing_transfers drop constraint outgoing_transfers_asset_check;
alter table outgoing_transfers add constraint outgoing_transfers_asset_check
  check (asset in ('token', 'native', 'energy', 'bandwidth'));
-- A resource intent moves a resource, a transfer moves coins: never mixed up.
alter table outgoing_transfers add constraint outgoing_transfers_resource_kind_check
  check ((kind in ('resource_stake', 'resource_delegation', 'resource_reclaim')) = (asset in ('energy', 'bandwidth')));

-- A deposit address whose sweep waits for the resource account's energy (instead of burning TRX)
-- since this moment; cleared when its sweep is queued.
alter table sweep_checks add column energy_wait_since timestamptz;

-- Costs in the books (issue #38, part 3): what each mined transfer cost, from its receipt — the
-- native coin it burned or paid (TRON sun: energy, bandwidth, account creation; EVM wei: gas used ×
-- effective gas price) and the resource it consumed (TRON energy, delegated included; EVM gas).
-- Null for transfers finished before this migration, never mined, or on the simulator.
alter table outgoing_transfers add column fee_paid numeric(38,0) check (fee_paid >= 0);
alter table outgoing_transfers add column resource_used numeric(38,0) check (resource_used >= 0);
