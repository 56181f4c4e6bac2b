import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { Link, useNavigate } from "react-router-dom";
import { post } from "../api/client";
import type { KeyPair } from "../api/types";
import { Form, FormError, SubmitButton } from "../components/Form";
import { Field, PageHeader, RevealOnce } from "../components/ui";
import { useSession } from "../session";

export default function SignUp() {
  const { signedIn, setEnvironment } = useSession();
  const navigate = useNavigate();
  const [form, setForm] = useState({ companyName: "", email: "", password: "" });
  const register = useMutation({
    mutationFn: () => post<{ apiKeys: KeyPair[] }>("/api/v1/auth/register", form),
  });
  const sandboxKeys = register.data?.apiKeys.find((k) => k.environment === "sandbox");

  if (register.isSuccess && sandboxKeys) {
    return (
      <section className="card auth-card auth-card-wide" aria-labelledby="page-title">
        <PageHeader title="Your account is ready" />
        <p>
          Here are your <strong>sandbox</strong> API keys, for trying stablegate with test money. When you go
          live, switch to production and create (or rotate) a key pair on the API keys page to see its secret.
        </p>
        <RevealOnce
          title="Sandbox API key pair"
          items={[
            { label: "API key", value: sandboxKeys.apiKey },
            { label: "API secret", value: sandboxKeys.apiSecret },
          ]}
          onDone={async () => {
            setEnvironment("sandbox");
            await signedIn();
            navigate("/", { replace: true });
          }}
        />
      </section>
    );
  }

  const set = (k: keyof typeof form) => (e: React.ChangeEvent<HTMLInputElement>) =>
    setForm({ ...form, [k]: e.target.value });
  return (
    <section className="card auth-card" aria-labelledby="page-title">
      <p className="brand brand-large">stablegate</p>
      <PageHeader title="Create your account" />
      <Form submission={register} onSubmit={() => register.mutate()}>
        <Field label="Company name">
          {(id) => (
            <input
              id={id}
              required
              autoComplete="organization"
              value={form.companyName}
              onChange={set("companyName")}
            />
          )}
        </Field>
        <Field label="E-mail">
          {(id) => (
            <input
              id={id}
              type="email"
              required
              autoComplete="email"
              value={form.email}
              onChange={set("email")}
            />
          )}
        </Field>
        <Field label="Password" hint="At least 10 characters. A short sentence works well.">
          {(id, hint) => (
            <input
              id={id}
              type="password"
              required
              minLength={10}
              autoComplete="new-password"
              aria-describedby={hint}
              value={form.password}
              onChange={set("password")}
            />
          )}
        </Field>
        <FormError />
        <SubmitButton className="btn btn-primary btn-block" pendingLabel="Creating your account…">
          Create account
        </SubmitButton>
      </Form>
      <p className="auth-links">
        Already have an account? <Link to="/login">Sign in</Link>
      </p>
    </section>
  );
}
