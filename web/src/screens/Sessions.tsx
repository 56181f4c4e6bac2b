import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { get, getList, post } from "../api/client";
import type { CheckoutSession, CurrencyType, Transaction } from "../api/types";
import { CurrencySelect } from "../components/CurrencySelect";
import { Form, SubmitButton } from "../components/Form";
import { TransactionTable } from "../components/TransactionTable";
import {
  CopyButton,
  Empty,
  ErrorNotice,
  Field,
  Loading,
  Notice,
  PageHeader,
  StatusBadge,
} from "../components/ui";
import { useCurrencies } from "../lib/currencies";
import { formatAmount, formatDate } from "../lib/format";
import { useCan, useEnvKey, useSession } from "../session";

const UNIT = 1_000_000;
/** A token amount (at most 6 decimals) as integer base units: sums and differences without float error. */
const toUnits = (n: number) => Math.round(n * UNIT);

function SessionCard({ id }: { id: string }) {
  const { environment } = useSession();
  const canPay = useCan()("sandbox:pay");
  const { label, unit } = useCurrencies();
  const client = useQueryClient();
  const [payAmount, setPayAmount] = useState("");
  const sessionKey = useEnvKey("checkout-session", id);
  // While the session is pending, its hosted page's event stream says when it changes (one
  // long-lived request, not a read every second and a half: issue #35, the dashboard's polling
  // emptied a developer's rate limit). Without the stream (the session belongs to the other
  // listener's environment, or the stream failed) it is re-read every 10 s.
  const [streaming, setStreaming] = useState(false);
  const session = useQuery({
    queryKey: sessionKey,
    queryFn: () => get<CheckoutSession>(`/checkout/session/${encodeURIComponent(id)}`),
    refetchInterval: (q) => (q.state.data?.status === "pending" && !streaming ? 10_000 : false),
  });
  const pending = session.data?.status === "pending";
  // The query key is a new array each render: the effect reads the current one.
  const sessionKeyRef = useRef(sessionKey);
  sessionKeyRef.current = sessionKey;
  useEffect(() => {
    if (!pending) return;
    const events = new EventSource(`/pay/${encodeURIComponent(id)}/events`);
    events.addEventListener("status", () => {
      setStreaming(true);
      void client.invalidateQueries({ queryKey: sessionKeyRef.current });
    });
    events.onerror = () => {
      if (events.readyState === EventSource.CLOSED) setStreaming(false);
    };
    return () => {
      events.close();
      setStreaming(false);
    };
  }, [pending, id, client]);
  const data = session.data;
  // What has arrived so far (mined, confirmed or still confirming), and what is left to pay.
  const paidUnits = data ? toUnits(Math.max(data.actualBalance, data.detectedAmount)) : 0;
  const remainingUnits = data ? Math.max(0, toUnits(data.amount) - paidUnits) : 0;
  const partial = data !== undefined && paidUnits > 0 && remainingUnits > 0;
  const pay = useMutation({
    // Empty: the rest of the amount (the simulator's own default is the full amount, again).
    mutationFn: () =>
      post(
        `/api/v1/sandbox/checkout/${encodeURIComponent(id)}/pay`,
        payAmount ? { amount: payAmount } : partial ? { amount: String(remainingUnits / UNIT) } : {},
      ),
    onSuccess: async () => {
      setPayAmount("");
      await client.invalidateQueries({ queryKey: [environment] });
    },
  });
  if (session.isPending) return <Loading label="Loading the session…" />;
  if (session.error) return <ErrorNotice error={session.error} />;
  const s = session.data;
  return (
    <section className="card session" aria-labelledby="session-title" data-testid="session-card">
      <h2 id="session-title">
        Session <code>{s.id}</code>
      </h2>
      <p aria-live="polite">
        Status: <StatusBadge status={s.status} />
        {s.status === "confirmed" ? " — the payment arrived and your balance is credited." : null}
        {s.status === "pending" && s.detectedAt === null && !partial
          ? " — waiting for the customer's payment."
          : null}
        {s.status === "pending" && partial ? (
          <>
            {" — "}
            <strong>
              partially paid {formatAmount(paidUnits / UNIT)} / {formatAmount(s.amount)}{" "}
              {unit(s.currencyType)}
            </strong>
            , waiting for the remaining {formatAmount(remainingUnits / UNIT)} {unit(s.currencyType)}
            {s.confirmations.current < s.confirmations.required
              ? ` (confirming ${s.confirmations.current} of ${s.confirmations.required})`
              : ""}
            .
          </>
        ) : null}
        {s.status === "pending" && s.detectedAt !== null && !partial
          ? ` — payment detected (${formatAmount(s.detectedAmount)}), confirming ${s.confirmations.current} of ${s.confirmations.required}.`
          : null}
      </p>
      <dl className="details">
        <div>
          <dt>Amount</dt>
          <dd>
            {formatAmount(s.amount)} {label(s.currencyType)}
          </dd>
        </div>
        {s.priceAmount !== null && s.priceCurrency !== null ? (
          <div>
            <dt>Price</dt>
            <dd>
              {formatAmount(s.priceAmount)} {s.priceCurrency}
            </dd>
          </div>
        ) : null}
        {s.exchangeRate !== null && s.priceCurrency !== null ? (
          <div>
            <dt>Locked rate</dt>
            <dd data-testid="session-rate">
              1 {s.priceCurrency} = {s.exchangeRate} {unit(s.currencyType)}{" "}
              <span className="muted">
                ({s.rateSource ?? "—"}, {formatDate(s.rateAt)})
              </span>
            </dd>
          </div>
        ) : null}
        <div>
          <dt>Received so far</dt>
          <dd>{formatAmount(s.actualBalance)}</dd>
        </div>
        <div>
          <dt>Pay to address</dt>
          <dd>
            <code>{s.walletAddress}</code> <CopyButton value={s.walletAddress} />
          </dd>
        </div>
        <div>
          <dt>Expires</dt>
          <dd>{formatDate(s.expiresAt)}</dd>
        </div>
        {s.orderId ? (
          <div>
            <dt>Order ID</dt>
            <dd>{s.orderId}</dd>
          </div>
        ) : null}
      </dl>
      <p>
        <a className="btn" href={s.checkoutUrl} target="_blank" rel="noopener noreferrer">
          Open the hosted payment page ↗
        </a>
      </p>
      {environment === "sandbox" && s.status === "pending" && canPay ? (
        <Form className="inline-form" submission={pay} onSubmit={() => pay.mutate()}>
          <Field
            label="Simulate a payment"
            hint={
              partial
                ? `Leave empty to pay the remaining ${formatAmount(remainingUnits / UNIT)} ${unit(s.currencyType)}; enter less to test another partial payment.`
                : "Leave empty to pay the full amount; enter less to test a partial payment."
            }
          >
            {(fid, hint) => (
              <input
                id={fid}
                inputMode="decimal"
                placeholder={String(partial ? remainingUnits / UNIT : s.amount)}
                aria-describedby={hint}
                value={payAmount}
                onChange={(e) => setPayAmount(e.target.value)}
              />
            )}
          </Field>
          <SubmitButton pendingLabel="Paying…">Pay with the simulator</SubmitButton>
        </Form>
      ) : null}
      <ErrorNotice error={pay.error} labels={{ amount: "Simulate a payment" }} />
    </section>
  );
}

/** The API's fields by the create form's labels (in error messages); the amount's names the token. */
const createLabels = (amount: string) => ({
  amount,
  currencyType: "Network",
  orderId: "Order ID (optional)",
  expiresInMinutes: "Expires in (minutes)",
});

export default function Sessions() {
  const { environment } = useSession();
  const canCreate = useCan()("payments:create");
  const currencies = useCurrencies();
  const [form, setForm] = useState({
    amount: "25",
    // Until the merchant picks one: the environment's first enabled currency type.
    currencyType: null as CurrencyType | null,
    orderId: "",
    expiresInMinutes: "30",
  });
  const [current, setCurrent] = useState<string | null>(null);
  const [lookup, setLookup] = useState("");
  const selected = currencies.find(form.currencyType ?? "") ?? currencies.list?.[0];
  const amountLabel = selected ? `Amount (${selected.token})` : "Amount";
  const create = useMutation({
    mutationFn: () =>
      post<CheckoutSession>("/checkout/session", {
        amount: form.amount,
        currencyType: selected?.currencyType,
        ...(form.orderId ? { orderId: form.orderId } : {}),
        ...(form.expiresInMinutes ? { expiresInMinutes: Number(form.expiresInMinutes) } : {}),
      }),
    onSuccess: (s) => setCurrent(s.id),
  });
  const deposits = useQuery({
    queryKey: useEnvKey("transactions", "deposits"),
    queryFn: () => getList<Transaction>("/api/v1/dashboard/transactions", { type: "deposit", limit: 10 }),
    refetchInterval: 5_000,
  });

  return (
    <>
      <PageHeader title="Checkout sessions" />
      {environment === "production" ? (
        <Notice kind="warning">
          You're in <strong>production</strong>: a session here asks your customer for real money. Switch to
          the sandbox to try things out.
        </Notice>
      ) : null}
      <section className="card" aria-labelledby="new-session">
        <h2 id="new-session">
          {!canCreate
            ? "Look up a session"
            : environment === "sandbox"
              ? "Create a test session"
              : "Create a session"}
        </h2>
        {canCreate ? (
          <Form
            className="form-grid"
            submission={create}
            onSubmit={() => {
              if (selected) create.mutate();
            }}
          >
            <Field label={amountLabel}>
              {(id) => (
                <input
                  id={id}
                  required
                  inputMode="decimal"
                  value={form.amount}
                  onChange={(e) => setForm({ ...form, amount: e.target.value })}
                />
              )}
            </Field>
            <Field label="Network">
              {(id) => (
                <CurrencySelect
                  id={id}
                  currencies={currencies}
                  value={selected?.currencyType}
                  onChange={(currencyType) => setForm({ ...form, currencyType })}
                />
              )}
            </Field>
            <Field label="Order ID (optional)">
              {(id) => (
                <input
                  id={id}
                  value={form.orderId}
                  onChange={(e) => setForm({ ...form, orderId: e.target.value })}
                />
              )}
            </Field>
            <Field label="Expires in (minutes)">
              {(id) => (
                <input
                  id={id}
                  type="number"
                  min={5}
                  max={1440}
                  value={form.expiresInMinutes}
                  onChange={(e) => setForm({ ...form, expiresInMinutes: e.target.value })}
                />
              )}
            </Field>
            <div className="form-actions">
              <SubmitButton pendingLabel="Creating…">Create session</SubmitButton>
            </div>
          </Form>
        ) : null}
        <ErrorNotice error={create.error} labels={createLabels(amountLabel)} />
        <Form
          className="inline-form"
          onSubmit={() => {
            if (lookup.trim()) setCurrent(lookup.trim());
          }}
        >
          <Field label={canCreate ? "Or look up a session by ID" : "Session ID"}>
            {(id) => <input id={id} value={lookup} onChange={(e) => setLookup(e.target.value)} />}
          </Field>
          <SubmitButton className="btn">Look up</SubmitButton>
        </Form>
      </section>
      {current ? <SessionCard key={current} id={current} /> : null}
      <section aria-labelledby="recent-deposits">
        <h2 id="recent-deposits">Recent deposits</h2>
        {deposits.isPending ? <Loading /> : null}
        <ErrorNotice error={deposits.error} />
        {deposits.data && deposits.data.data.length === 0 ? (
          <Empty title="No deposits yet">
            <p>Each checkout session becomes a deposit here.</p>
          </Empty>
        ) : null}
        {deposits.data && deposits.data.data.length > 0 ? (
          <TransactionTable rows={deposits.data.data} caption="Recent deposits" />
        ) : null}
      </section>
    </>
  );
}
