import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useSearchParams } from "react-router-dom";
import { get, getList, post } from "../api/client";
import type { DeliveryStatus, WebhookAttempt, WebhookEvent } from "../api/types";
import { ActionButton, ConfirmAction, Form, SubmitButton } from "../components/Form";
import { useStepUp } from "../components/StepUp";
import {
  Empty,
  ErrorNotice,
  Field,
  Loading,
  Notice,
  PageHeader,
  Pager,
  RevealOnce,
  StatusBadge,
} from "../components/ui";
import { formatDate, shorten } from "../lib/format";
import { useCan, useEnvKey, useSession } from "../session";

/** The event log's delivery filter, a caption per delivery status. */
const DELIVERY_FILTERS = {
  delivered: "Delivered",
  pending: "Pending (retry scheduled)",
  failed: "Failed",
} satisfies Record<DeliveryStatus, string>;

function EventDetail({ id, onClose }: { id: string; onClose(): void }) {
  const { environment } = useSession();
  const canWrite = useCan()("webhooks:write");
  const client = useQueryClient();
  const event = useQuery({
    queryKey: useEnvKey("webhook-event", id),
    queryFn: () =>
      get<WebhookEvent & { deliveryAttempts: WebhookAttempt[] }>(
        `/api/v1/webhook/events/${encodeURIComponent(id)}`,
      ),
  });
  const retry = useMutation({
    mutationFn: () => post<WebhookEvent>(`/api/v1/webhook/retry/${encodeURIComponent(id)}`),
    onSettled: async () => {
      await client.invalidateQueries({ queryKey: [environment, "webhook-event", id] });
      await client.invalidateQueries({ queryKey: [environment, "webhook-events"] });
    },
  });
  const e = event.data;
  return (
    <section className="card" aria-labelledby="event-title" data-testid="event-detail">
      <div className="section-header">
        <h3 id="event-title">
          Event <code>{shorten(id, 10, 6)}</code>
        </h3>
        <button type="button" className="btn btn-small" onClick={onClose}>
          Close
        </button>
      </div>
      {event.isPending ? <Loading /> : null}
      <ErrorNotice error={event.error} />
      {e ? (
        <>
          <p>
            <StatusBadge status={e.deliveryStatus} /> {e.type} · transaction status {e.transactionStatus} · to{" "}
            <code className="break">{e.url ?? "no URL set"}</code>
          </p>
          {e.nextAttemptAt ? (
            <p className="muted">Next automatic attempt: {formatDate(e.nextAttemptAt)}</p>
          ) : null}
          <h4>Attempts ({e.deliveryAttempts.length})</h4>
          {e.deliveryAttempts.length === 0 ? <p className="muted">No attempt yet.</p> : null}
          <ol className="attempts">
            {e.deliveryAttempts.map((a) => (
              <li key={a.attemptNumber}>
                <strong>#{a.attemptNumber}</strong> {formatDate(a.startedAt)} ·{" "}
                {a.responseStatus !== null ? `HTTP ${a.responseStatus}` : "no answer"} · {a.latencyMs} ms
                {a.manual ? " · manual" : ""}
                {a.error ? <span className="attempt-error"> · {a.error}</span> : null}
                {a.responseBody ? <pre className="code-block">{a.responseBody}</pre> : null}
              </li>
            ))}
          </ol>
          <details>
            <summary>Payload sent</summary>
            <pre className="code-block">{JSON.stringify(e.payload, null, 2)}</pre>
          </details>
          {canWrite ? (
            <ActionButton
              mutation={retry}
              onClick={() => retry.mutate()}
              className="btn btn-primary"
              pendingLabel="Retrying…"
            >
              Retry now
            </ActionButton>
          ) : null}
          {retry.data ? (
            <Notice kind={retry.data.deliveryStatus === "delivered" ? "success" : "warning"}>
              Retry: {retry.data.deliveryStatus}
              {retry.data.lastResponseStatus !== null ? ` (HTTP ${retry.data.lastResponseStatus})` : ""}
              {retry.data.lastError ? ` — ${retry.data.lastError}` : ""}
            </Notice>
          ) : null}
          <ErrorNotice error={retry.error} />
        </>
      ) : null}
    </section>
  );
}

export default function Webhooks() {
  const { environment } = useSession();
  // The endpoint and the secret are for roles that write webhooks; the event log for those that read.
  const canWrite = useCan()("webhooks:write");
  const client = useQueryClient();
  const [params, setParams] = useSearchParams();
  const [url, setUrl] = useState("");
  const [filter, setFilter] = useState<DeliveryStatus | "">("");
  const [page, setPage] = useState(1);
  const [confirmRotate, setConfirmRotate] = useState(false);
  const [revealed, setRevealed] = useState<string | null>(null);
  const selected = params.get("event");
  // Production: the URL and the secret rotation need the e-mailed code (and TOTP).
  const stepUp = useStepUp();

  const secret = useQuery({
    queryKey: useEnvKey("webhook-secret"),
    queryFn: () => get<{ webhookSecret: string }>("/api/v1/webhook/secret"),
    enabled: canWrite,
  });
  const events = useQuery({
    queryKey: useEnvKey("webhook-events", filter, page),
    queryFn: () =>
      getList<WebhookEvent>("/api/v1/webhook/events", { status: filter || undefined, page, limit: 20 }),
    placeholderData: keepPreviousData,
    refetchInterval: 5_000,
  });
  const currentUrl = events.data?.data.find((e) => e.url)?.url;
  const saveUrl = useMutation({
    mutationFn: () =>
      stepUp.run((codes) =>
        post<{ webhookUrl: string }>("/api/v1/webhook/url", { webhookUrl: url.trim(), ...codes }),
      ),
  });
  const test = useMutation({
    mutationFn: () =>
      post<{ webhookEventId: string; deliveryStatus: DeliveryStatus; responseStatus: number | null }>(
        "/api/v1/webhook/test",
      ),
    onSettled: () => client.invalidateQueries({ queryKey: [environment, "webhook-events"] }),
  });
  const rotate = useMutation({
    mutationFn: () =>
      stepUp.run((codes) => post<{ webhookSecret: string }>("/api/v1/webhook/secret/rotate", codes)),
    onSuccess: async (r) => {
      setConfirmRotate(false);
      setRevealed(r.webhookSecret);
      await client.invalidateQueries({ queryKey: [environment, "webhook-secret"] });
    },
  });

  function select(id: string | null) {
    const next = new URLSearchParams(params);
    if (id) next.set("event", id);
    else next.delete("event");
    setParams(next);
  }

  return (
    <>
      <PageHeader title="Webhooks" />
      {stepUp.dialog}
      {canWrite ? (
        <>
          <section className="card" aria-labelledby="endpoint-title">
            <h2 id="endpoint-title">Endpoint</h2>
            <p className="muted">
              stablegate POSTs a signed JSON event to this URL whenever a deposit, withdrawal or payout
              changes status.
              {environment === "sandbox" ? " Plain http is accepted in the sandbox." : " It must be https."}
            </p>
            <Form className="inline-form" submission={saveUrl} onSubmit={() => saveUrl.mutate()}>
              <Field
                label="Webhook URL"
                hint={saveUrl.data ? undefined : currentUrl ? `Last used: ${currentUrl}` : undefined}
              >
                {(id, hint) => (
                  <input
                    id={id}
                    type="url"
                    required
                    placeholder="https://example.com/stablegate/webhook"
                    aria-describedby={hint}
                    value={url}
                    onChange={(e) => setUrl(e.target.value)}
                  />
                )}
              </Field>
              <SubmitButton>Save URL</SubmitButton>
            </Form>
            {saveUrl.isSuccess ? (
              <Notice kind="success">Webhook URL saved: {saveUrl.data.webhookUrl}</Notice>
            ) : null}
            <ErrorNotice error={saveUrl.error} />
            <div className="button-row">
              <ActionButton mutation={test} onClick={() => test.mutate()} pendingLabel="Sending…">
                Send a test event
              </ActionButton>
            </div>
            {test.data ? (
              <Notice kind={test.data.deliveryStatus === "delivered" ? "success" : "warning"}>
                <span data-testid="test-result">
                  Test event {test.data.deliveryStatus === "delivered" ? "delivered" : "not delivered"}
                  {test.data.responseStatus !== null
                    ? ` — your endpoint answered HTTP ${test.data.responseStatus}`
                    : " — no answer"}
                  .
                </span>{" "}
                <button
                  type="button"
                  className="btn btn-link"
                  onClick={() => select(test.data.webhookEventId)}
                >
                  See the attempt
                </button>
              </Notice>
            ) : null}
            <ErrorNotice error={test.error} />
          </section>

          <section className="card" aria-labelledby="secret-title">
            <h2 id="secret-title">Signing secret</h2>
            <p className="muted">
              Every event carries the Standard Webhooks headers <code>webhook-id</code>,{" "}
              <code>webhook-timestamp</code> and <code>webhook-signature</code> (<code>v1,</code> + base64
              HMAC-SHA256 of <code>id.timestamp.body</code>, keyed with this secret). Verify the signature on
              the raw body, refuse a timestamp more than 5 minutes old so a captured request can't be replayed
              (<code>verifyWebhook</code> of <code>@stablegate/sdk</code> checks both), and use{" "}
              <code>webhook-id</code> to drop duplicates: a retry keeps it.
            </p>
            {secret.isPending ? <Loading /> : null}
            <ErrorNotice error={secret.error} />
            {secret.data ? (
              <p>
                <code data-testid="masked-secret" className="break">
                  {secret.data.webhookSecret}
                </code>
              </p>
            ) : null}
            {revealed ? (
              <RevealOnce
                title="New webhook secret"
                items={[{ label: "Webhook secret", value: revealed }]}
                onDone={() => setRevealed(null)}
              />
            ) : (
              <button type="button" className="btn" onClick={() => setConfirmRotate(true)}>
                Rotate secret…
              </button>
            )}
            <ConfirmAction
              subject={confirmRotate || null}
              submission={rotate}
              title="Rotate the webhook secret?"
              confirmLabel="Rotate"
              danger
              onConfirm={() => rotate.mutate()}
              onClose={() => setConfirmRotate(false)}
            >
              <p>
                A new secret signs every event from now on; it is shown once. The Standard Webhooks header
                carries the old signature too for 24 hours, so you have time to update your server.
              </p>
            </ConfirmAction>
          </section>
        </>
      ) : null}

      <section className="card" aria-labelledby="local-title">
        <h2 id="local-title">Test on your machine</h2>
        <p className="muted">
          Your development server on localhost can't be reached from here. Forward this environment's events
          to it, with the exact body and signed headers of a real delivery, from the command line of{" "}
          <code>@stablegate/sdk</code>:
        </p>
        <pre className="code-block">
          <code>npx stablegate-dev listen --forward-to http://localhost:3000/webhooks</code>
        </pre>
        <p className="hint">
          It reads the key pair from <code>STABLEGATE_API_KEY</code> and <code>STABLEGATE_API_SECRET</code> (a{" "}
          {environment === "sandbox" ? "sandbox" : "production"} pair from API keys).{" "}
          <code>npx stablegate-dev trigger deposit.confirmed</code> makes one happen in the sandbox.
        </p>
      </section>

      <section aria-labelledby="log-title">
        <div className="section-header">
          <h2 id="log-title">Event log</h2>
          <Field label="Delivery status">
            {(id) => (
              <select
                id={id}
                value={filter}
                onChange={(e) => {
                  setFilter(e.target.value as DeliveryStatus | "");
                  setPage(1);
                }}
              >
                <option value="">All</option>
                {Object.entries(DELIVERY_FILTERS).map(([s, label]) => (
                  <option key={s} value={s}>
                    {label}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </div>
        {selected ? <EventDetail key={selected} id={selected} onClose={() => select(null)} /> : null}
        {events.isPending ? <Loading /> : null}
        <ErrorNotice error={events.error} />
        {events.data && events.data.data.length === 0 ? (
          <Empty title={filter ? `No ${filter} events` : "No events yet"}>
            <p>Send a test event, or create a checkout session, to see one here.</p>
          </Empty>
        ) : null}
        {events.data && events.data.data.length > 0 ? (
          <>
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Webhook events</caption>
                <thead>
                  <tr>
                    <th scope="col">Created</th>
                    <th scope="col">Event</th>
                    <th scope="col">Delivery</th>
                    <th scope="col" className="num">
                      Attempts
                    </th>
                    <th scope="col">Last answer</th>
                    <th scope="col">Details</th>
                  </tr>
                </thead>
                <tbody>
                  {events.data.data.map((e) => (
                    <tr
                      key={e.webhookEventId}
                      className={e.webhookEventId === selected ? "is-selected" : undefined}
                    >
                      <td>{formatDate(e.createdAt)}</td>
                      <td>
                        {e.type} · {e.transactionStatus}
                      </td>
                      <td>
                        <StatusBadge status={e.deliveryStatus} />
                      </td>
                      <td className="num">{e.attempts}</td>
                      <td className="cell-text">
                        {e.lastResponseStatus !== null
                          ? `HTTP ${e.lastResponseStatus}`
                          : (e.lastError ?? "—")}
                      </td>
                      <td>
                        <button
                          type="button"
                          className="btn btn-small"
                          onClick={() => select(e.webhookEventId)}
                        >
                          View<span className="visually-hidden"> event {e.webhookEventId}</span>
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pagination={events.data.pagination} onPage={setPage} />
          </>
        ) : null}
      </section>
    </>
  );
}
