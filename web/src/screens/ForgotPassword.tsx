import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "react-router-dom";
import { post } from "../api/client";
import { Form, FormError, SubmitButton } from "../components/Form";
import { Field, Notice, PageHeader } from "../components/ui";

export default function ForgotPassword() {
  const [email, setEmail] = useState("");
  const forgot = useMutation({
    mutationFn: () => post<{ message: string }>("/api/v1/auth/password/forgot", { email }),
  });
  return (
    <section className="card auth-card" aria-labelledby="page-title">
      <PageHeader title="Reset your password" />
      {forgot.isSuccess ? (
        <Notice kind="success">{forgot.data.message} The link works once and expires soon.</Notice>
      ) : (
        <Form submission={forgot} onSubmit={() => forgot.mutate()}>
          <Field label="E-mail">
            {(id) => (
              <input id={id} type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
            )}
          </Field>
          <FormError />
          <SubmitButton className="btn btn-primary btn-block">Send reset link</SubmitButton>
        </Form>
      )}
      <p className="auth-links">
        <Link to="/login">Back to sign in</Link>
      </p>
    </section>
  );
}
