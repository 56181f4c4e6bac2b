import { useQuery } from "@tanstack/react-query";
import { Link, useParams } from "react-router-dom";
import { get, getList } from "../api/client";
import type { Transaction, WebhookEvent } from "../api/types";
import { useHeldDecision } from "../components/HeldDecision";
import { CopyButton, ErrorNotice, Loading, PageHeader, StatusBadge } from "../components/ui";
import { useCurrencies } from "../lib/currencies";
import { formatAmount, formatDate } from "../lib/format";
import { holdReasonText } from "../lib/held";
import { useCan, useEnvKey } from "../session";

export default function TransactionDetail() {
  const { id = "" } = useParams();
  // The webhook events are for roles that read webhooks (not finance or viewer).
  const seesWebhooks = useCan()("webhooks:read");
  const { label } = useCurrencies();
  // A held deposit: release or return (owner and admins); the query below follows the decision.
  const held = useHeldDecision();
  const tx = useQuery({
    queryKey: useEnvKey("transaction", id),
    queryFn: () => get<Transaction>(`/api/v1/dashboard/transactions/${encodeURIComponent(id)}`),
  });
  const events = useQuery({
    queryKey: useEnvKey("webhook-events", "tx", id),
    queryFn: () => getList<WebhookEvent>("/api/v1/webhook/events", { transactionId: id, limit: 20 }),
    enabled: seesWebhooks,
  });
  const t = tx.data;
  const rows: [string, React.ReactNode][] = t
    ? [
        ["Transaction ID", <code key="id">{t.id}</code>],
        [
          "Type",
          <span key="type" className="cap">
            {t.type}
          </span>,
        ],
        ["Status", <StatusBadge key="s" status={t.status} />],
        // Kept after the decision: a released or returned deposit was held for this reason.
        ...(t.holdReason
          ? ([[t.status === "held" ? "Held because" : "Was held because", holdReasonText(t.holdReason)]] as [
              string,
              React.ReactNode,
            ][])
          : []),
        ["Amount", `${formatAmount(t.amount)} ${label(t.currencyType)}`],
        ["Fee", formatAmount(t.fee)],
        ["Net amount", formatAmount(t.netAmount)],
        ["Received on-chain", t.actualBalance === null ? "—" : formatAmount(t.actualBalance)],
        ["Wallet address", t.walletAddress ? <code key="w">{t.walletAddress}</code> : "—"],
        ["Blockchain transaction", t.blockchainTxHash ? <code key="h">{t.blockchainTxHash}</code> : "—"],
        ["Order ID", t.orderId ?? "—"],
        ["Reference", t.reference ?? "—"],
        ["External user", t.externalUserId ?? "—"],
        ["Created", formatDate(t.createdAt)],
        ["Updated", formatDate(t.updatedAt)],
        ["Confirmed", formatDate(t.confirmedAt)],
      ]
    : [];
  return (
    <>
      <PageHeader title="Transaction">
        <Link to="/transactions">← All transactions</Link>
      </PageHeader>
      {tx.isPending ? <Loading /> : null}
      <ErrorNotice error={tx.error} />
      {held.notice}
      {t ? (
        <section className="card">
          <dl className="details">
            {rows.map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{v}</dd>
              </div>
            ))}
          </dl>
          <div className="button-row">
            <CopyButton value={t.id} label="Copy ID" />
            {held.actions(t)}
          </div>
          {t.status === "held" && !held.canReview ? (
            <p className="muted">
              It is not in your available balance: the owner or an admin decides whether to release (credit)
              it or return it to its sender.
            </p>
          ) : null}
        </section>
      ) : null}
      {seesWebhooks ? (
        <section aria-labelledby="tx-events">
          <h2 id="tx-events">Webhook events</h2>
          <ErrorNotice error={events.error} />
          {events.data && events.data.data.length === 0 ? (
            <p className="muted">No webhook events for this transaction.</p>
          ) : null}
          {events.data && events.data.data.length > 0 ? (
            <ul className="plain-list">
              {events.data.data.map((e) => (
                <li key={e.webhookEventId}>
                  <StatusBadge status={e.deliveryStatus} /> {e.transactionStatus} · {e.attempts} attempt
                  {e.attempts === 1 ? "" : "s"} · {formatDate(e.createdAt)} ·{" "}
                  <Link to={`/webhooks?event=${e.webhookEventId}`}>Details</Link>
                </li>
              ))}
            </ul>
          ) : null}
        </section>
      ) : null}
      {held.dialogs}
    </>
  );
}
