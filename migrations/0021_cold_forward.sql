-- Cold-wallet forwarding (issue #22): the hot wallet's excess above its configured maximum is sent
-- to the configured cold address, as an ordinary outgoing transfer (the sender's crash safety).
alter table outgoing_transfers drop constraint outgoing_transfers_kind_check;
alter table outgoing_transfers add constraint outgoing_transfers_kind_check
  check (kind in ('withdrawal', 'payout', 'sweep', 'gas_topup', 'cold_forward'));
