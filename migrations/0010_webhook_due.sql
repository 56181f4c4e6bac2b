-- The delivery queue moves to a narrow table of its own (docs/decisions/webhooks.md 17).
--
-- Before: due events were found through a partial index on webhook_events (next_attempt_at, where
-- pending), so the result of every attempt changed an indexed column (delivery_status leaves the
-- index's predicate) and wrote a new index entry in each of the table's four indexes. Now a
-- pending event has one row here: when it is due and who holds it. The result of an attempt
-- deletes that row (or moves it to the next retry) and updates webhook_events in columns no index
-- covers, which PostgreSQL can do as a HOT update (no index entries). A claim updates only the
-- lease of this narrow row.
--
-- A row exists exactly while the event is pending. The lease of a pending event is here; the
-- lease columns of webhook_events are used only by manual retries of delivered or failed events.
-- webhook_events.next_attempt_at stays as the shown copy of the row's time.
create table webhook_due (
  event_id         text primary key references webhook_events (id),
  next_attempt_at  timestamptz not null,
  -- Lease: the claim token of the worker (or manual retry) holding the event, until locked_until.
  locked_by        text,
  locked_until     timestamptz
) with (fillfactor = 50);
-- Without deduplication: many events share a due time (every event of one transaction has the same
-- now()), and a deduplicated entry (one key, a list of rows) can only be marked dead once every row
-- in it is gone, so each claim would visit the finished rows of a batch again until VACUUM.
create index webhook_due_next_idx on webhook_due (next_attempt_at) with (deduplicate_items = off);

insert into webhook_due (event_id, next_attempt_at, locked_by, locked_until)
select id, next_attempt_at, locked_by, locked_until
from webhook_events
where delivery_status = 'pending';

update webhook_events set locked_by = null, locked_until = null
where delivery_status = 'pending' and (locked_by is not null or locked_until is not null);

drop index webhook_events_due_idx;
