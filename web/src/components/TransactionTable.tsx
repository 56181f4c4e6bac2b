import type { ReactNode } from "react";
import { Link } from "react-router-dom";
import type { Transaction } from "../api/types";
import { useCurrencies } from "../lib/currencies";
import { formatAmount, formatDate, shorten } from "../lib/format";
import { holdReasonText } from "../lib/held";
import { StatusBadge } from "./ui";

/**
 * Transactions in a table. A held deposit shows why under its status; `actions` gives a row its
 * buttons (the decisions on a held deposit, HeldDecision.tsx): the "Decision" column shows when
 * any row has some.
 */
export function TransactionTable({
  rows,
  caption,
  actions,
}: {
  rows: Transaction[];
  caption: string;
  actions?: (t: Transaction) => ReactNode;
}) {
  const { label } = useCurrencies();
  const decisions = actions ? rows.map((t) => actions(t)) : [];
  const withDecisions = decisions.some((d) => d !== null && d !== undefined);
  return (
    <div className="table-wrap">
      <table>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Date</th>
            <th scope="col">Type</th>
            <th scope="col">Status</th>
            <th scope="col" className="num">
              Amount
            </th>
            <th scope="col">Currency</th>
            <th scope="col">Reference</th>
            <th scope="col">Transaction</th>
            {withDecisions ? <th scope="col">Decision</th> : null}
          </tr>
        </thead>
        <tbody>
          {rows.map((t, i) => (
            <tr key={t.id}>
              <td>{formatDate(t.createdAt)}</td>
              <td className="cap">{t.type}</td>
              <td>
                <StatusBadge status={t.status} />
                {t.status === "held" && t.holdReason ? (
                  <span className="hold-reason">{holdReasonText(t.holdReason)}</span>
                ) : null}
              </td>
              <td className="num">{formatAmount(t.amount)}</td>
              <td>{label(t.currencyType)}</td>
              <td className="cell-break">{t.orderId ?? t.reference ?? "—"}</td>
              <td>
                <Link to={`/transactions/${t.id}`} title={t.id}>
                  {shorten(t.id, 8, 4)}
                </Link>
              </td>
              {withDecisions ? <td>{decisions[i] ?? null}</td> : null}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
