import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import QRCode from "qrcode";
import { useEffect, useState } from "react";
import { getList, post } from "../api/client";
import type { CurrencyType, PaymentLink } from "../api/types";
import { ConfirmAction, Form, SubmitButton } from "../components/Form";
import { CopyButton, Empty, ErrorNotice, Field, Loading, Notice, PageHeader, Pager } from "../components/ui";
import { useCurrencies } from "../lib/currencies";
import { formatAmount, formatDate } from "../lib/format";
import { useCan, useEnvKey, useSession } from "../session";

/**
 * Payment links (issue #41, docs/merchants/payment-links.md): create one (a fixed amount, a price in
 * fiat, or an amount the payer enters), the list with each link's payments and total, its URL to copy
 * and its QR code, deactivate. The types are the generated `PaymentLink`.
 */

type Pricing = "fixed" | "fiat" | "open";

/** The API's fields by the form's labels (in error messages). */
const LABELS = {
  title: "Title",
  description: "Description (optional)",
  amount: "Amount",
  priceAmount: "Price",
  priceCurrency: "Currency",
  minAmount: "Minimum (optional)",
  maxAmount: "Maximum (optional)",
  currencyTypes: "Networks",
  orderIdPrefix: "Order ID prefix (optional)",
  maxPayments: "Most payments (optional)",
  expiresAt: "Closes at (optional)",
  successUrl: "Success URL (optional)",
};

/** The QR code of a link's URL, drawn here with the library the hosted page uses (no request). */
function LinkQr({ url }: { url: string }) {
  const [src, setSrc] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    QRCode.toDataURL(url, { errorCorrectionLevel: "M", margin: 4 }).then(
      (data) => live && setSrc(data),
      () => live && setSrc(null),
    );
    return () => {
      live = false;
    };
  }, [url]);
  return src ? <img src={src} alt={`QR code of ${url}`} width={160} height={160} className="qr" /> : null;
}

function priceText(l: PaymentLink, unit: (c: string) => string): string {
  const tokens = [...new Set(l.currencyTypes.map(unit))].join(" / ");
  if (l.amount !== null) return `${formatAmount(l.amount)} ${tokens}`;
  if (l.priceAmount !== null) return `${formatAmount(l.priceAmount)} ${l.priceCurrency ?? ""}`;
  const min = l.minAmount !== null ? formatAmount(l.minAmount) : "any";
  const max = l.maxAmount !== null ? formatAmount(l.maxAmount) : "any";
  return `payer enters (${min} – ${max}) ${tokens}`;
}

function CreateLink() {
  const currencies = useCurrencies();
  const client = useQueryClient();
  const { environment } = useSession();
  const [pricing, setPricing] = useState<Pricing>("fixed");
  const [form, setForm] = useState({
    title: "",
    description: "",
    amount: "25",
    priceAmount: "",
    priceCurrency: "USD",
    minAmount: "",
    maxAmount: "",
    orderIdPrefix: "",
    maxPayments: "",
    expiresAt: "",
    successUrl: "",
  });
  const [networks, setNetworks] = useState<CurrencyType[] | null>(null);
  const chosen = networks ?? currencies.list?.map((c) => c.currencyType) ?? [];
  const set = (k: keyof typeof form) => (e: { target: { value: string } }) =>
    setForm({ ...form, [k]: e.target.value });
  const create = useMutation({
    mutationFn: () =>
      post<PaymentLink>("/api/v1/dashboard/payment-links", {
        title: form.title,
        ...(form.description ? { description: form.description } : {}),
        ...(pricing === "fixed" ? { amount: form.amount } : {}),
        ...(pricing === "fiat" ? { priceAmount: form.priceAmount, priceCurrency: form.priceCurrency } : {}),
        ...(pricing === "open" && form.minAmount ? { minAmount: form.minAmount } : {}),
        ...(pricing === "open" && form.maxAmount ? { maxAmount: form.maxAmount } : {}),
        currencyTypes: chosen,
        ...(form.orderIdPrefix ? { orderIdPrefix: form.orderIdPrefix } : {}),
        ...(form.maxPayments ? { maxPayments: Number(form.maxPayments) } : {}),
        ...(form.expiresAt ? { expiresAt: new Date(form.expiresAt).toISOString() } : {}),
        ...(form.successUrl ? { successUrl: form.successUrl } : {}),
      }),
    onSuccess: async () => {
      setForm({ ...form, title: "", description: "" });
      await client.invalidateQueries({ queryKey: [environment, "payment-links"] });
    },
  });
  return (
    <section className="card" aria-labelledby="new-link">
      <h2 id="new-link">Create a payment link</h2>
      <Form className="form-grid" submission={create} onSubmit={() => create.mutate()}>
        <Field label={LABELS.title}>
          {(id) => <input id={id} required maxLength={200} value={form.title} onChange={set("title")} />}
        </Field>
        <Field label={LABELS.description}>
          {(id) => <input id={id} maxLength={2000} value={form.description} onChange={set("description")} />}
        </Field>
        <Field label="Price">
          {(id) => (
            <select id={id} value={pricing} onChange={(e) => setPricing(e.target.value as Pricing)}>
              <option value="fixed">A fixed amount in the token</option>
              <option value="fiat">A price in fiat (converted per payment)</option>
              <option value="open">The payer enters the amount</option>
            </select>
          )}
        </Field>
        {pricing === "fixed" ? (
          <Field label={LABELS.amount}>
            {(id) => (
              <input id={id} required inputMode="decimal" value={form.amount} onChange={set("amount")} />
            )}
          </Field>
        ) : null}
        {pricing === "fiat" ? (
          <>
            <Field label={LABELS.priceAmount}>
              {(id) => (
                <input
                  id={id}
                  required
                  inputMode="decimal"
                  value={form.priceAmount}
                  onChange={set("priceAmount")}
                />
              )}
            </Field>
            <Field label={LABELS.priceCurrency}>
              {(id) => (
                <input
                  id={id}
                  required
                  maxLength={3}
                  value={form.priceCurrency}
                  onChange={set("priceCurrency")}
                />
              )}
            </Field>
          </>
        ) : null}
        {pricing === "open" ? (
          <>
            <Field label={LABELS.minAmount}>
              {(id) => (
                <input id={id} inputMode="decimal" value={form.minAmount} onChange={set("minAmount")} />
              )}
            </Field>
            <Field label={LABELS.maxAmount}>
              {(id) => (
                <input id={id} inputMode="decimal" value={form.maxAmount} onChange={set("maxAmount")} />
              )}
            </Field>
          </>
        ) : null}
        <fieldset className="networks-choice">
          <legend>{LABELS.currencyTypes}</legend>
          {currencies.list?.map((c) => (
            <label key={c.currencyType}>
              <input
                type="checkbox"
                checked={chosen.includes(c.currencyType)}
                onChange={(e) =>
                  setNetworks(
                    e.target.checked
                      ? [...chosen, c.currencyType]
                      : chosen.filter((x) => x !== c.currencyType),
                  )
                }
              />{" "}
              {currencies.label(c.currencyType)}
            </label>
          ))}
        </fieldset>
        <Field label={LABELS.orderIdPrefix}>
          {(id) => (
            <input id={id} maxLength={100} value={form.orderIdPrefix} onChange={set("orderIdPrefix")} />
          )}
        </Field>
        <Field label={LABELS.maxPayments}>
          {(id) => (
            <input id={id} type="number" min={1} value={form.maxPayments} onChange={set("maxPayments")} />
          )}
        </Field>
        <Field label={LABELS.expiresAt}>
          {(id) => <input id={id} type="datetime-local" value={form.expiresAt} onChange={set("expiresAt")} />}
        </Field>
        <Field label={LABELS.successUrl}>
          {(id) => <input id={id} type="url" value={form.successUrl} onChange={set("successUrl")} />}
        </Field>
        <div className="form-actions">
          <SubmitButton pendingLabel="Creating…">Create link</SubmitButton>
        </div>
      </Form>
      <ErrorNotice error={create.error} labels={LABELS} />
    </section>
  );
}

export default function PaymentLinks() {
  const { environment } = useSession();
  const can = useCan();
  const canCreate = can("payments:create");
  const { unit } = useCurrencies();
  const client = useQueryClient();
  const [page, setPage] = useState(1);
  const [shown, setShown] = useState<string | null>(null);
  const [closing, setClosing] = useState<PaymentLink | null>(null);
  const links = useQuery({
    queryKey: useEnvKey("payment-links", page),
    queryFn: () => getList<PaymentLink>("/api/v1/dashboard/payment-links", { page, limit: 20 }),
  });
  const deactivate = useMutation({
    mutationFn: (l: PaymentLink) =>
      post<PaymentLink>(`/api/v1/dashboard/payment-links/${encodeURIComponent(l.id)}/deactivate`),
    onSuccess: async () => {
      setClosing(null);
      await client.invalidateQueries({ queryKey: [environment, "payment-links"] });
    },
  });
  return (
    <>
      <PageHeader title="Payment links" />
      {environment === "production" ? (
        <Notice kind="warning">
          You're in <strong>production</strong>: a link here asks your customers for real money.
        </Notice>
      ) : null}
      {canCreate ? <CreateLink /> : null}
      <section aria-labelledby="links-list">
        <h2 id="links-list">Your links</h2>
        {links.isPending ? <Loading /> : null}
        <ErrorNotice error={links.error} />
        {links.data && links.data.data.length === 0 ? (
          <Empty title="No payment links yet">
            <p>A link is a page you share; each payer who opens it pays through a checkout session.</p>
          </Empty>
        ) : null}
        {links.data && links.data.data.length > 0 ? (
          <div className="table-wrap">
            <table>
              <caption className="visually-hidden">Payment links</caption>
              <thead>
                <tr>
                  <th scope="col">Title</th>
                  <th scope="col">Price</th>
                  <th scope="col">Payments</th>
                  <th scope="col">Total paid</th>
                  <th scope="col">Status</th>
                  <th scope="col">Link</th>
                </tr>
              </thead>
              <tbody>
                {links.data.data.map((l) => (
                  <tr key={l.id} data-testid="payment-link-row">
                    <td className="cell-break">
                      {l.title}
                      <br />
                      <span className="muted">created {formatDate(l.createdAt)}</span>
                    </td>
                    <td>{priceText(l, unit)}</td>
                    <td>
                      {l.payments}
                      {l.maxPayments !== null ? ` / ${l.maxPayments}` : ""}
                    </td>
                    <td>{formatAmount(l.totalPaid)}</td>
                    <td>
                      {l.active
                        ? l.expiresAt !== null && Date.parse(l.expiresAt) <= Date.now()
                          ? "expired"
                          : "active"
                        : "deactivated"}
                    </td>
                    <td className="cell-break">
                      <code>{l.url}</code> <CopyButton value={l.url} label="Copy URL" />{" "}
                      <button
                        type="button"
                        className="btn btn-small"
                        onClick={() => setShown(shown === l.id ? null : l.id)}
                      >
                        {shown === l.id ? "Hide QR" : "QR code"}
                      </button>{" "}
                      {canCreate && l.active ? (
                        <button
                          type="button"
                          className="btn btn-small btn-danger"
                          onClick={() => setClosing(l)}
                        >
                          Deactivate
                        </button>
                      ) : null}
                      {shown === l.id ? <LinkQr url={l.url} /> : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
        <Pager pagination={links.data?.pagination} onPage={setPage} />
      </section>
      <ConfirmAction
        subject={closing}
        submission={deactivate}
        onConfirm={(l) => deactivate.mutate(l)}
        onClose={() => setClosing(null)}
        title="Deactivate this payment link?"
        confirmLabel="Deactivate"
        danger
      >
        <p>
          Its page will say the link is closed and open no more payments. Payments already started go on. This
          cannot be undone.
        </p>
      </ConfirmAction>
    </>
  );
}
