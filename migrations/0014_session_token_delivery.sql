-- How a dashboard session receives its access tokens (security issue 18, the accessToken-in-body
-- report): 'cookie' (httpOnly cookie only; every browser sign-in) or 'bearer' (also in the JSON
-- body, for a client that asked with `X-Token-Delivery: bearer` at sign-in). A refresh hands a body
-- token only to a 'bearer' session, so script on a page cannot turn a browser session into a
-- token it can read. Sessions from before this migration are browser sessions.
alter table dashboard_sessions
  add column token_delivery text not null default 'cookie' check (token_delivery in ('cookie', 'bearer'));
