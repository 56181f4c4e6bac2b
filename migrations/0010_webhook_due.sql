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

-- Every pending event written gets its queue row from the database itself, whichever code writes
-- it: during a rolling upgrade, API processes of the previous version still insert events without
-- one, and those events must not wait forever. The event's lease columns, when set at insert (a
-- test delivery leases its own event), become the queue row's lease. Created before the copy below:
-- creating the trigger waits for transactions writing events and holds new ones until this
-- migration commits, so no event falls between the copy and the trigger.
create function webhook_due_enqueue() returns trigger language plpgsql as $$
begin
  insert into webhook_due (event_id, next_attempt_at, locked_by, locked_until)
  values (new.id, new.next_attempt_at, new.locked_by, new.locked_until);
  return null;
end
$$;
create trigger webhook_events_enqueue after insert on webhook_events
  for each row when (new.delivery_status = 'pending') execute function webhook_due_enqueue();

insert into webhook_due (event_id, next_attempt_at, locked_by, locked_until)
select id, next_attempt_at, locked_by, locked_until
from webhook_events
where delivery_status = 'pending';

update webhook_events set locked_by = null, locked_until = null
where delivery_status = 'pending' and (locked_by is not null or locked_until is not null);

drop index webhook_events_due_idx;
