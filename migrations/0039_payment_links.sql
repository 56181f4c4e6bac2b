-- Payment links (issue #41, docs/decisions/payment-links.md): a reusable hosted page (`/l/{id}`) that
-- opens an ordinary checkout session per payer. A link has a token `amount`, or a fiat price
-- (`price_amount` + `price_currency`), or neither (the payer enters an amount between `min_amount`
-- and `max_amount`). Amounts in base units (numeric(38,0)) as everywhere; the fiat price as the
-- decimal the merchant gave (6 decimals, as a session's `priceAmount`).
create table payment_links (
  id              text primary key,
  merchant_id     text not null references merchants (id),
  environment     text not null check (environment in ('production', 'sandbox')),
  title           text not null check (length(title) between 1 and 200),
  description     text check (description is null or length(description) <= 2000),
  amount          numeric(38,0) check (amount > 0),
  price_amount    numeric(38,6) check (price_amount > 0),
  price_currency  text check (price_currency is null or price_currency ~ '^[A-Z]{3}$'),
  min_amount      numeric(38,0) check (min_amount > 0),
  max_amount      numeric(38,0) check (max_amount > 0),
  currency_types  text[] not null check (cardinality(currency_types) > 0),
  order_id_prefix text check (order_id_prefix is null or length(order_id_prefix) <= 100),
  metadata        jsonb,
  -- Paid (confirmed) sessions at most; open sessions hold a slot until they end (the decision record).
  max_payments    integer check (max_payments > 0),
  expires_at      timestamptz,
  success_url     text check (success_url is null or length(success_url) <= 2048),
  active          boolean not null default true,
  -- Sessions ever opened from the link (counted under the link's row lock): the `n` of `orderIdPrefix` + n.
  sessions_opened integer not null default 0 check (sessions_opened >= 0),
  deactivated_at  timestamptz,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now(),
  constraint payment_links_one_price check (amount is null or price_amount is null),
  constraint payment_links_price_pair check ((price_amount is null) = (price_currency is null)),
  constraint payment_links_open_bounds check (
    (amount is null and price_amount is null) or (min_amount is null and max_amount is null)),
  constraint payment_links_bounds_order check (min_amount is null or max_amount is null or min_amount <= max_amount),
  constraint payment_links_inactive check (active or deactivated_at is not null)
);
create index payment_links_created_idx on payment_links (merchant_id, environment, created_at, id);
create index payment_links_updated_idx on payment_links (merchant_id, environment, updated_at, id);
create index payment_links_amount_idx on payment_links (merchant_id, environment, amount, id);

-- The session (its deposit transaction) a link opened. Only the session's own transaction carries
-- it (late and wrong-network deposits are their own transactions): what the link's counts read.
-- The partial index is empty at creation (the column is new), as 0031's held index was.
alter table transactions add column payment_link_id text references payment_links (id);
create index transactions_payment_link_idx on transactions (payment_link_id, status)
  where payment_link_id is not null;

-- The api creates, deactivates and locks links (select … for update needs update); the worker reads.
grant select, insert, update on payment_links to stablegate_api;
grant select on payment_links to stablegate_worker;
