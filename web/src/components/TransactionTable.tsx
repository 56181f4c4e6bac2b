import { Link } from "react-router-dom";
import type { Transaction } from "../api/types";
import { useCurrencies } from "../lib/currencies";
import { formatAmount, formatDate, shorten } from "../lib/format";
import { StatusBadge } from "./ui";

export function TransactionTable({ rows, caption }: { rows: Transaction[]; caption: string }) {
  const { label } = useCurrencies();
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
          </tr>
        </thead>
        <tbody>
          {rows.map((t) => (
            <tr key={t.id}>
              <td>{formatDate(t.createdAt)}</td>
              <td className="cap">{t.type}</td>
              <td>
                <StatusBadge status={t.status} />
              </td>
              <td className="num">{formatAmount(t.amount)}</td>
              <td>{label(t.currencyType)}</td>
              <td className="cell-break">{t.orderId ?? t.reference ?? "—"}</td>
              <td>
                <Link to={`/transactions/${t.id}`} title={t.id}>
                  {shorten(t.id, 8, 4)}
                </Link>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
