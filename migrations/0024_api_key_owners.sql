-- One principal model (issue #34, CONTRACT §6): every API key pair acts for a member of its
-- merchant, the one who created it (or to whom an owner or admin reassigned it). The API-key
-- channel resolves that member's current role on every request: a pair never does more than its
-- member's role allows in its environment, and stops when the member is removed.
--
-- `created_by` is null only for a pair the operator issued (`stablegate merchant create`) to a
-- merchant that has no member yet: it belongs to the merchant's owner (whoever that is when it is
-- used; with no member at all it acts as the owner, as every pair did before this migration).
alter table api_keys add column created_by text references dashboard_users (id);

-- Existing pairs (registration, the CLI, the dashboard: no creator was recorded) belong to the
-- merchant's owner.
update api_keys k
   set created_by = u.id
  from dashboard_users u
 where u.merchant_id = k.merchant_id
   and u.member_role = 'owner'
   and u.removed_at is null
   and k.created_by is null;
