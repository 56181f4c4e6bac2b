#!/usr/bin/env node
// Validates rendered Kubernetes manifests (multi-document YAML files, e.g. `helm template` output)
// against the Kubernetes schemas shipped by kubernetes-models (and the Prometheus Operator's for
// ServiceMonitor & co.). Every object must be of a known apiVersion/kind and valid; otherwise exit 1.
//
//   node scripts/validate-k8s.mjs [--stablegate] FILE...
//
// The schemas check types, required fields, enums and formats but allow unknown fields (the
// Kubernetes OpenAPI documents do), so --stablegate adds the chart's own invariants over the same
// objects: the pod hardening, which role gets which secret, and the references between objects
// (Secret keys, ConfigMaps, Service ports and selectors, PDB selectors, the signer's
// NetworkPolicy). docs/decisions/deployment-helm.md says why each one is there.
import { readFileSync } from "node:fs";
import path from "node:path";
import * as prometheusOperator from "@kubernetes-models/prometheus-operator";
import * as kubernetes from "kubernetes-models";
import { parseAllDocuments } from "yaml";

const args = process.argv.slice(2);
const stablegate = args.includes("--stablegate");
const files = args.filter((a) => !a.startsWith("--"));
if (files.length === 0) {
  console.error("usage: node scripts/validate-k8s.mjs [--stablegate] FILE...");
  process.exit(2);
}

/** apiVersion + kind → model class, collected from every module the two packages export. */
function modelRegistry() {
  const models = new Map();
  const walk = (namespace, depth) => {
    for (const value of Object.values(namespace)) {
      if (
        typeof value === "function" &&
        typeof value.apiVersion === "string" &&
        typeof value.kind === "string"
      ) {
        models.set(`${value.apiVersion}/${value.kind}`, value);
      } else if (value && typeof value === "object" && depth < 3) walk(value, depth + 1);
    }
  };
  walk(kubernetes, 0);
  walk(prometheusOperator, 0);
  return models;
}

const models = modelRegistry();
let failures = 0;
let invalidObjects = 0;
const fail = (where, message) => {
  failures++;
  console.error(`  FAIL ${where}: ${message}`);
};

const totals = new Map();
let objectCount = 0;
for (const file of files) {
  const docs = parseAllDocuments(readFileSync(file, "utf8"));
  const objects = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      fail(path.basename(file), `YAML: ${doc.errors[0].message}`);
      continue;
    }
    const object = doc.toJS();
    if (object === null || object === undefined) continue;
    objects.push(object);
  }
  const counts = new Map();
  for (const object of objects) {
    const where = `${path.basename(file)} ${object.kind ?? "?"}/${object.metadata?.name ?? "?"}`;
    const Model = models.get(`${object.apiVersion}/${object.kind}`);
    counts.set(object.kind, (counts.get(object.kind) ?? 0) + 1);
    if (!Model) {
      invalidObjects++;
      fail(where, `unknown kind ${object.apiVersion}/${object.kind}`);
      continue;
    }
    try {
      new Model(object).validate();
    } catch (err) {
      invalidObjects++;
      fail(where, err instanceof Error ? err.message : String(err));
    }
  }
  if (stablegate) checkStablegate(objects, path.basename(file));
  objectCount += objects.length;
  for (const [kind, n] of counts) totals.set(kind, (totals.get(kind) ?? 0) + n);
  const summary = [...counts].map(([kind, n]) => `${kind} ${n}`).join(", ");
  console.log(`${path.basename(file)}: ${objects.length} objects (${summary})`);
}
const summary = [...totals]
  .sort()
  .map(([kind, n]) => `${kind} ${n}`)
  .join(", ");
console.log(`validated ${objectCount} objects in ${files.length} file(s): ${summary}`);
console.log(
  `schemas: ${objectCount - invalidObjects} valid, ${invalidObjects} invalid; ` +
    `${stablegate ? `chart checks: ${failures - invalidObjects} problems` : "chart checks: not run"}`,
);
process.exit(failures > 0 ? 1 : 0);

// --- the chart's invariants ------------------------------------------------------------------

function checkStablegate(objects, file) {
  const byKind = (kind) => objects.filter((o) => o.kind === kind);
  const secrets = new Map(byKind("Secret").map((s) => [s.metadata.name, { ...s.data, ...s.stringData }]));
  const configMaps = new Map(byKind("ConfigMap").map((c) => [c.metadata.name, c.data ?? {}]));
  const workloads = [...byKind("Deployment"), ...byKind("Job")];
  const component = (o) => o.metadata?.labels?.["app.kubernetes.io/component"];
  const matches = (selector, labels) =>
    Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v) &&
    Object.keys(selector ?? {}).length > 0;

  for (const w of workloads) {
    const where = `${file} ${w.kind}/${w.metadata.name}`;
    const role = component(w);
    const pod = w.spec.template.spec;
    const psc = pod.securityContext ?? {};
    if (psc.runAsNonRoot !== true) fail(where, "pod securityContext.runAsNonRoot is not true");
    if (psc.runAsUser !== 1000) fail(where, "pod securityContext.runAsUser is not 1000");
    if (psc.seccompProfile?.type !== "RuntimeDefault")
      fail(where, "pod seccompProfile is not RuntimeDefault");
    if (pod.automountServiceAccountToken !== false) fail(where, "the service account token is mounted");
    if (pod.enableServiceLinks !== false) fail(where, "service links are enabled");
    if (w.kind === "Deployment" && !matches(w.spec.selector.matchLabels, w.spec.template.metadata?.labels))
      fail(where, "the selector does not match the pod labels");
    const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
    for (const c of pod.containers) {
      const at = `${where} container ${c.name}`;
      const sc = c.securityContext ?? {};
      if (sc.readOnlyRootFilesystem !== true) fail(at, "readOnlyRootFilesystem is not true");
      if (sc.allowPrivilegeEscalation !== false) fail(at, "allowPrivilegeEscalation is not false");
      if (sc.runAsNonRoot !== true) fail(at, "runAsNonRoot is not true");
      if (!(sc.capabilities?.drop ?? []).includes("ALL")) fail(at, "capabilities.drop lacks ALL");
      if (!c.resources?.requests) fail(at, "no resource requests");
      const mounts = new Map((c.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
      for (const dir of ["/data", "/tmp"])
        if (!mounts.has(dir)) fail(at, `${dir} is not a volume (read-only root)`);
      for (const name of mounts.values()) if (!volumes.has(name)) fail(at, `volume ${name} is not defined`);

      const env = new Map((c.env ?? []).map((e) => [e.name, e]));
      const fromConfigMaps = (c.envFrom ?? []).filter((f) => f.configMapRef).map((f) => f.configMapRef.name);
      const configured = new Set(env.keys());
      for (const name of fromConfigMaps) {
        if (!configMaps.has(name)) fail(at, `envFrom ConfigMap ${name} is not rendered`);
        for (const key of Object.keys(configMaps.get(name) ?? {})) configured.add(key);
      }
      for (const e of env.values()) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref && secrets.has(ref.name) && !(ref.key in secrets.get(ref.name)))
          fail(at, `${e.name}: Secret ${ref.name} has no key ${ref.key}`);
      }
      const arg = (c.args ?? [])[0];
      const hasMnemonicMount = (c.volumeMounts ?? []).some(
        (m) => volumes.get(m.name)?.secret && m.mountPath.includes("secrets"),
      );
      const mustHave = (names) => {
        for (const n of names) if (!configured.has(n)) fail(at, `${n} is not set`);
      };
      const mustNotHave = (names) => {
        for (const n of names) if (configured.has(n)) fail(at, `${n} must not be given to the ${arg} role`);
      };
      const expectedArg = {
        api: ["api", "serve"],
        worker: ["worker"],
        signer: ["signer"],
        migrate: ["migrate"],
      }[role];
      if (!expectedArg?.includes(arg)) fail(at, `args ${JSON.stringify(c.args)} for component ${role}`);
      if (arg === "api") {
        mustNotHave(["INTERNAL_SHARED_SECRET", "MASTER_MNEMONIC", "MASTER_MNEMONIC_FILE", "SIGNER_URL"]);
        if (hasMnemonicMount) fail(at, "the api mounts a secret volume (the mnemonic?)");
      }
      if (arg === "api" || arg === "serve") {
        mustHave(["HOST", "PORT", "SANDBOX_PORT", "DATA_DIR", "NODE_ENV"]);
        if (c.livenessProbe?.httpGet?.path !== "/healthz") fail(at, "liveness probe is not GET /healthz");
        if (c.readinessProbe?.httpGet?.path !== "/readyz") fail(at, "readiness probe is not GET /readyz");
        const ports = new Set((c.ports ?? []).map((p) => p.containerPort));
        for (const key of ["PORT", "SANDBOX_PORT"]) {
          const value =
            env.get(key)?.value ?? fromConfigMaps.map((n) => configMaps.get(n)?.[key]).find(Boolean);
          if (value !== undefined && !ports.has(Number(value)))
            fail(at, `${key}=${value} is not a container port`);
        }
      }
      if (arg === "worker") {
        mustHave([
          "SIGNER_URL",
          "INTERNAL_SHARED_SECRET",
          "DATABASE_URL",
          "MASTER_XPUBS",
          "JWT_SECRET",
          "SECRET_ENCRYPTION_KEY",
          "METRICS_TOKEN",
        ]);
        mustNotHave(["MASTER_MNEMONIC", "MASTER_MNEMONIC_FILE"]);
        if (hasMnemonicMount) fail(at, "the worker mounts a secret volume (the mnemonic?)");
      }
      if (arg === "signer") {
        mustHave([
          "MASTER_MNEMONIC_FILE",
          "INTERNAL_SHARED_SECRET",
          "DATABASE_URL",
          "SIGNER_HOST",
          "SIGNER_PORT",
          "DATA_DIR",
        ]);
        mustNotHave([
          "MASTER_MNEMONIC",
          "SECRET_ENCRYPTION_KEY",
          "JWT_SECRET",
          "METRICS_TOKEN",
          "MASTER_XPUBS",
          "REDIS_URL",
        ]);
        if ((c.envFrom ?? []).length > 0) fail(at, "the signer takes envFrom sources");
        const file = env.get("MASTER_MNEMONIC_FILE")?.value ?? "";
        const mount = (c.volumeMounts ?? []).find((m) => file.startsWith(`${m.mountPath}/`));
        if (!mount || !volumes.get(mount.name)?.secret)
          fail(at, `MASTER_MNEMONIC_FILE ${file} is not on a Secret volume`);
        if (w.spec.replicas !== 1) fail(where, "the signer must have exactly 1 replica");
        if (w.spec.strategy?.type !== "Recreate") fail(where, "the signer's strategy must be Recreate");
      }
      if (arg === "migrate") {
        const hook = w.metadata.annotations?.["helm.sh/hook"] ?? "";
        if (!hook.includes("pre-install") || !hook.includes("pre-upgrade"))
          fail(where, "not a pre-install,pre-upgrade hook");
        const secretEnv = [...env.values()].filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.name);
        if (secretEnv.join() !== "DATABASE_URL")
          fail(at, `secrets given: ${secretEnv.join(", ")} (only DATABASE_URL)`);
        if ((c.envFrom ?? []).length > 0) fail(at, "the migration takes envFrom sources");
        const ref = env.get("DATABASE_URL")?.valueFrom?.secretKeyRef;
        const made = secrets.get(ref?.name);
        const secretObject = byKind("Secret").find((s) => s.metadata.name === ref?.name);
        if (made && !(secretObject.metadata.annotations?.["helm.sh/hook"] ?? "").includes("pre-install"))
          fail(
            at,
            `Secret ${ref.name} is rendered by the chart but is not a pre-install hook (it would not exist yet)`,
          );
      }
    }
  }
  for (const [name, data] of configMaps)
    for (const key of [
      "INTERNAL_SHARED_SECRET",
      "MASTER_MNEMONIC",
      "MASTER_MNEMONIC_FILE",
      "JWT_SECRET",
      "SECRET_ENCRYPTION_KEY",
    ])
      if (key in data) fail(`${file} ConfigMap/${name}`, `holds ${key}`);

  const podsOf = (selector) =>
    workloads.filter((w) => w.kind === "Deployment" && matches(selector, w.spec.template.metadata?.labels));
  for (const s of byKind("Service")) {
    const where = `${file} Service/${s.metadata.name}`;
    const targets = podsOf(s.spec.selector);
    if (targets.length === 0) {
      fail(where, "selects no Deployment's pods");
      continue;
    }
    const names = new Set(
      targets.flatMap((w) =>
        w.spec.template.spec.containers.flatMap((c) => (c.ports ?? []).map((p) => p.name)),
      ),
    );
    for (const p of s.spec.ports)
      if (typeof p.targetPort === "string" && !names.has(p.targetPort))
        fail(where, `targetPort ${p.targetPort} is no container port`);
  }
  for (const p of byKind("PodDisruptionBudget"))
    if (podsOf(p.spec.selector?.matchLabels).length === 0)
      fail(`${file} PodDisruptionBudget/${p.metadata.name}`, "selects no Deployment's pods");
  const services = new Map(byKind("Service").map((s) => [s.metadata.name, s]));
  for (const i of byKind("Ingress"))
    for (const rule of i.spec.rules ?? [])
      for (const p of rule.http?.paths ?? []) {
        const svc = services.get(p.backend.service?.name);
        if (!svc)
          fail(`${file} Ingress/${i.metadata.name}`, `backend ${p.backend.service?.name} is not rendered`);
        else if (
          !svc.spec.ports.some(
            (sp) => sp.name === p.backend.service.port.name || sp.port === p.backend.service.port.number,
          )
        )
          fail(
            `${file} Ingress/${i.metadata.name}`,
            `service ${svc.metadata.name} has no port ${JSON.stringify(p.backend.service.port)}`,
          );
      }
  for (const m of byKind("ServiceMonitor")) {
    const where = `${file} ServiceMonitor/${m.metadata.name}`;
    const targets = byKind("Service").filter((s) => matches(m.spec.selector?.matchLabels, s.metadata.labels));
    if (targets.length === 0) fail(where, "selects no Service");
    for (const e of m.spec.endpoints) {
      if (e.bearerTokenSecret?.key !== "METRICS_TOKEN")
        fail(where, "does not send METRICS_TOKEN as its bearer token");
      if (!targets.some((s) => s.spec.ports.some((p) => p.name === e.port)))
        fail(where, `no selected Service has port ${e.port}`);
    }
  }
  const signer = workloads.find((w) => component(w) === "signer");
  if (signer) {
    const signerLabels = signer.spec.template.metadata.labels;
    const policy = byKind("NetworkPolicy").find((n) =>
      matches(n.spec.podSelector?.matchLabels, signerLabels),
    );
    if (!policy) fail(`${file} signer`, "no NetworkPolicy selects the signer pod");
    else {
      const worker = workloads.find((w) => component(w) === "worker");
      const froms = (policy.spec.ingress ?? []).flatMap((r) => r.from ?? []);
      if (froms.length === 0) fail(`${file} NetworkPolicy/${policy.metadata.name}`, "allows every source");
      if (
        worker &&
        !froms.some(
          (f) =>
            f.podSelector &&
            !f.namespaceSelector &&
            matches(f.podSelector.matchLabels, worker.spec.template.metadata.labels),
        )
      )
        fail(`${file} NetworkPolicy/${policy.metadata.name}`, "does not let the worker pods in");
      for (const w of workloads.filter((x) => x.kind === "Deployment" && x !== worker && x !== signer))
        if (
          froms.some(
            (f) =>
              f.podSelector &&
              !f.namespaceSelector &&
              matches(f.podSelector.matchLabels, w.spec.template.metadata.labels),
          )
        )
          fail(`${file} NetworkPolicy/${policy.metadata.name}`, `lets ${w.metadata.name} in`);
    }
  }
}
