-- Several providers per chain (issue #22): each provider's health as the process that watches the
-- chain last saw it, so that `/readyz` on any instance names a bad provider (one that is down,
-- lagging, or reported transfers no other provider confirmed).
create table chain_providers (
  network        text not null check (network in ('USDT-TRC20', 'USDT-ERC20')),
  environment    text not null check (environment in ('production', 'sandbox')),
  -- `p<n> <host>`: never a URL path or query (they may carry API keys).
  provider       text not null,
  condition      text not null check (condition in ('ok', 'down', 'lagging', 'suspect')),
  head_block     bigint,
  latency_ms     integer,
  disagreements  integer not null default 0,
  last_error     text,
  updated_at     timestamptz not null default now(),
  primary key (network, environment, provider)
);
