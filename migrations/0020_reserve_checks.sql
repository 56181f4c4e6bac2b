-- Reserve reconciliation (issue #22): the last comparison, per chain, of what stablegate holds on
-- chain with what its ledger owes, kept so that `/readyz` and `/metrics` on any instance show it.
create table reserve_checks (
  network        text not null check (network in ('USDT-TRC20', 'USDT-ERC20')),
  environment    text not null check (environment in ('production', 'sandbox')),
  checked_at     timestamptz not null,
  -- Token base units.
  on_chain       numeric(38,0) not null,
  in_flight      numeric(38,0) not null,
  owed           numeric(38,0) not null,
  pending_sweep  numeric(38,0) not null,
  shortfall      numeric(38,0) not null,
  tolerance      numeric(38,0) not null,
  detail         text not null,
  primary key (network, environment)
);
