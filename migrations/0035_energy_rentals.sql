-- Energy rental (issue #38, decision 21 of docs/decisions/tron-resources.md): for operators without
-- stake (or whose stake is busy past the wait limit), an outside provider delegates the energy a
-- transfer lacks, paid from a prepaid balance at the provider. One row per order, claimed
-- (`ordering`, committed) before the provider is called, so that a crash can never order twice:
-- a claim without an answer becomes `unknown` (an alert) and the chain decides whether the energy
-- came. Whether it was delivered is read from the chain, never from the provider's answer.
create table energy_rentals (
  id              text primary key,
  network         text not null,
  environment     text not null check (environment in ('production', 'sandbox')),
  -- The address that gets the energy: a deposit address (its sweep) or the hot wallet.
  receiver        text not null,
  energy          bigint not null check (energy > 0),
  status          text not null check (status in
                    ('requested', 'ordering', 'ordered', 'unknown', 'delivered', 'refused', 'expired')),
  -- The top-up that activates the receiver first (a non-activated address receives no delegation).
  after_intent_id text,
  -- The transfer the energy is for: a sweep, or the oldest of the hot wallet's batch (one rental
  -- per transfer: a transfer still queued after its rental does not get another one).
  serves_intent_id text unique,
  -- The most the order may cost (sun): the burn it replaces, as priced when it was planned. A
  -- fresher quote above it is not ordered.
  max_sun         numeric(38,0) check (max_sun >= 0),
  provider        text,
  serial          text,
  -- What the provider charged (sun), from its answer: the cost in the books (`paid by rental`).
  paid_sun        numeric(38,0) check (paid_sun >= 0),
  reason          text,
  created_at      timestamptz not null default now(),
  ordered_at      timestamptz,
  finished_at     timestamptz
);
-- One open rental per receiver.
create unique index energy_rentals_open_idx on energy_rentals (network, environment, receiver)
  where status in ('requested', 'ordering', 'ordered', 'unknown');
create index energy_rentals_receiver_idx on energy_rentals (network, environment, receiver, created_at);
create index energy_rentals_costs_idx on energy_rentals (ordered_at) where paid_sun is not null;
grant select on energy_rentals to stablegate_api, stablegate_signer;
grant select, insert, update, delete on energy_rentals to stablegate_worker;
