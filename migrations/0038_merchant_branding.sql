-- The hosted payment page belongs to the shop (issue #41, docs/decisions/deposits-page.md
-- "Branding"): per merchant (both environments: one shop), the name the page shows instead of the
-- company name, and a logo stored here (never fetched from elsewhere) and served from our origin at
-- `/pay/logo/{logo_sha256}`. A row of its own, so the merchants row the API-key lookup reads on every
-- request never carries the image bytes. The logo's columns are set together or not at all.
create table merchant_branding (
  merchant_id      text primary key references merchants (id),
  display_name     text check (display_name is null or (length(display_name) between 1 and 80)),
  logo             bytea check (logo is null or octet_length(logo) between 1 and 262144),
  logo_type        text check (logo_type is null or logo_type in ('image/png', 'image/jpeg', 'image/webp')),
  logo_sha256      text check (logo_sha256 is null or logo_sha256 ~ '^[0-9a-f]{64}$'),
  logo_width       integer check (logo_width is null or logo_width between 1 and 2048),
  logo_height      integer check (logo_height is null or logo_height between 1 and 2048),
  updated_at       timestamptz not null default now(),
  constraint merchant_branding_logo_whole check (
    (logo is null) = (logo_type is null) and (logo is null) = (logo_sha256 is null)
    and (logo is null) = (logo_width is null) and (logo is null) = (logo_height is null)
  )
);
-- The logo route finds the file by its hash alone.
create index merchant_branding_logo_idx on merchant_branding (logo_sha256) where logo_sha256 is not null;

-- The api writes it (the dashboard's settings) and serves it; the worker, as on every table, may
-- too. The signer's policy never looks at it: no grant.
grant select, insert, update, delete on merchant_branding to stablegate_api, stablegate_worker;
