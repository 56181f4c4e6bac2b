-- Attempts are only ever read per event, in order ((event_id, id)): that index becomes the primary
-- key and the separate one on id alone goes, so recording an attempt writes one index entry, not two.
alter table webhook_attempts drop constraint webhook_attempts_pkey;
alter table webhook_attempts add primary key (event_id, id);
drop index webhook_attempts_event_idx;
