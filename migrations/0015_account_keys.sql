-- Key custody (issue 25): the account extended public keys (m/44'/coin'/account') this database's
-- addresses are derived from, recorded by the first process that starts on it. Every later process
-- — api and worker with MASTER_XPUBS, serve and signer with the mnemonic — compares its own keys
-- with these and refuses to start on a mismatch: a deposit address derived from the wrong key is
-- an address the signer cannot spend from.
create table account_keys (
  network text not null,
  environment text not null check (environment in ('production', 'sandbox')),
  xpub text not null,
  recorded_at timestamptz not null default now(),
  primary key (network, environment)
);
