-- Prices in fiat and the shop's return addresses on checkout sessions (issue #41,
-- docs/decisions/prices.md). A session priced in fiat keeps the price it was given and the rate
-- locked when it was created: `price_amount` in 10^-6 units of `price_currency` (ISO 4217), the
-- rate as token units per unit of fiat (exact decimal), the source that quoted it and when. The
-- token amount to pay stays the deposit transaction's `amount`. All five are set together or none.
-- `success_url` / `cancel_url`: where the hosted page sends the payer back to the shop (never
-- called by the gateway).
alter table checkout_sessions
  add column price_amount   numeric(38, 0) check (price_amount > 0),
  add column price_currency text check (price_currency ~ '^[A-Z]{3}$'),
  add column exchange_rate  numeric check (exchange_rate > 0),
  add column rate_source    text,
  add column rate_at        timestamptz,
  add column success_url    text check (length(success_url) <= 2048),
  add column cancel_url     text check (length(cancel_url) <= 2048);
alter table checkout_sessions add constraint checkout_sessions_price_check check (
  (price_amount is null and price_currency is null and exchange_rate is null and rate_source is null
     and rate_at is null)
  or (price_amount is not null and price_currency is not null and exchange_rate is not null
     and rate_source is not null and rate_at is not null));
