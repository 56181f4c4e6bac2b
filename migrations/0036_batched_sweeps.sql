-- EVM sweeps without gas top-ups (issue #39, docs/decisions/evm-sweeps.md): on a network that runs
-- EIP-7702, deposit addresses delegate their code to the sweeper contract of the hot wallet, and one
-- transaction of the gas tank moves the tokens of many of them.
--
-- `sweeper_deploy`: the gas tank deploys the sweeper contract through the CREATE2 deployer (it moves
-- nothing: amount 0, asset native, to the deployer). `sweep_batch`: the gas tank's transaction that
-- carries a batch; its asset is the token, its recipient the hot wallet, its amount the batch's sum.
alter table outgoing_transfers drop constraint outgoing_transfers_kind_check;
alter table outgoing_transfers add constraint outgoing_transfers_kind_check
  check (kind in ('withdrawal', 'payout', 'sweep', 'gas_topup', 'cold_forward', 'return',
                  'resource_stake', 'resource_delegation', 'resource_reclaim',
                  'sweep_batch', 'sweeper_deploy'));
alter table outgoing_transfers drop constraint outgoing_transfers_amount_check;
alter table outgoing_transfers add constraint outgoing_transfers_amount_check
  check (amount > 0 or (kind = 'sweeper_deploy' and amount = 0));

-- Each address of a batch keeps its own `sweep` intent (its outcome, its address looked at again
-- when it fails), `carried`: never signed on its own. It waits for a carrier (`carrier_intent_id`
-- null: the sweeper assembles one), is signed with it and finishes with it, in the same
-- transactions, confirmed only when the carrier's receipt holds its own Transfer log.
alter table outgoing_transfers add column carried boolean not null default false;
alter table outgoing_transfers add column carrier_intent_id text references outgoing_transfers (intent_id);
alter table outgoing_transfers add constraint outgoing_transfers_carried_check
  check ((not carried or kind = 'sweep') and (carrier_intent_id is null or carried));
create index outgoing_transfers_carrier_idx on outgoing_transfers (carrier_intent_id)
  where carrier_intent_id is not null;
create index outgoing_transfers_uncarried_idx on outgoing_transfers (network, environment, created_at)
  where carried and carrier_intent_id is null and status = 'queued';
