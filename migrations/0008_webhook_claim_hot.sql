-- Webhook claims lease an event by setting only locked_by / locked_until (no indexed column), so
-- the claim can be a HOT update (no new index entries) when the event's page has room for the new
-- row version. Leave 30 % of each new page free for that. Existing pages keep their layout.
alter table webhook_events set (fillfactor = 70);
