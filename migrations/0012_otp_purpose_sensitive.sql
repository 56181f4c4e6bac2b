-- Step-up for sensitive dashboard writes (CONTRACT §6.1, security issue 18 finding 2): e-mailed
-- one-time codes gain the purpose `sensitive` (key pairs, settings, webhook URL and secret, 2FA off).
alter table dashboard_otps drop constraint dashboard_otps_purpose_check;
alter table dashboard_otps
  add constraint dashboard_otps_purpose_check check (purpose in ('payout', 'password_change', 'sensitive'));
