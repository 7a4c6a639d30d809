import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import Ajv, { type AnySchema } from "ajv";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { Affinity } from "kubernetes-models/v1/Affinity";
import { Container } from "kubernetes-models/v1/Container";
import { EnvVar } from "kubernetes-models/v1/EnvVar";
import { LocalObjectReference } from "kubernetes-models/v1/LocalObjectReference";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { PodSpec } from "kubernetes-models/v1/PodSpec";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { Toleration } from "kubernetes-models/v1/Toleration";
import { Volume } from "kubernetes-models/v1/Volume";

/**
 * deploy/ against the schemas: the Kubernetes manifests through kubernetes-models (the
 * Kubernetes OpenAPI schemas, compiled), the KServe resources through KServe's CRD schemas
 * (kserve-crds.excerpt.yaml) with the Kubernetes types they embed checked the same way.
 */
const DEPLOY = resolve(import.meta.dir, "../../deploy");
/** Parsed YAML, which the tests walk and edit at any depth. */
// biome-ignore lint/suspicious/noExplicitAny: untyped manifests, edited freely by the tests below
type Yaml = any;
const read = (path: string) => Bun.YAML.parse(readFileSync(join(DEPLOY, path), "utf8")) as Record<string, Yaml>;

type K8sModel = new (data: Yaml) => { validate(): void };
const EMBEDDED: Record<string, K8sModel> = {
  Affinity,
  Container,
  EnvVar,
  LocalObjectReference,
  PodSpec,
  Toleration,
  Volume,
};
const KINDS: Record<string, K8sModel> = { Deployment, Service, PersistentVolumeClaim, Secret };

function k8sProblem(type: string, data: unknown): string | null {
  const Model = EMBEDDED[type];
  if (!Model) return `no Kubernetes type ${type}`;
  try {
    new Model(data).validate();
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

const ajv = new Ajv({ allErrors: true, strict: false });
// The Kubernetes integer formats of the CRD schemas.
ajv.addFormat("int32", { type: "number", validate: (n: number) => Number.isInteger(n) && Math.abs(n) <= 2 ** 31 });
ajv.addFormat("int64", { type: "number", validate: (n: number) => Number.isSafeInteger(n) });
ajv.addKeyword({
  keyword: "x-kubernetes-embedded-type",
  validate: function check(type: string, data: unknown) {
    const problem = k8sProblem(type, data);
    (check as Yaml).errors = problem ? [{ message: `${type}: ${problem}` }] : [];
    return problem === null;
  },
  errors: true,
});
ajv.addKeyword({
  keyword: "x-kubernetes-embedded-rest",
  validate: function check(type: string, data: unknown, schema: Yaml) {
    const own = new Set(Object.keys((schema as { properties?: object }).properties ?? {}));
    const rest = Object.fromEntries(Object.entries(data as object).filter(([k]) => !own.has(k)));
    // ModelSpec's name is optional where Container's is required; PredictorSpec's containers too.
    if (type === "Container") rest.name ??= "kserve-container";
    if (type === "PodSpec") rest.containers ??= [];
    const problem = k8sProblem(type, rest);
    (check as Yaml).errors = problem ? [{ message: `${type}: ${problem}` }] : [];
    return problem === null;
  },
  errors: true,
});

const crds = Bun.YAML.parse(readFileSync(join(import.meta.dir, "kserve-crds.excerpt.yaml"), "utf8")) as Record<
  string,
  { apiVersion: string; kind: string; spec: AnySchema }
>;

function kserveProblems(doc: Record<string, Yaml>): string[] {
  const crd = Object.values(crds).find((c) => c.kind === doc.kind);
  if (!crd) return [`no CRD schema for kind ${doc.kind}`];
  const problems: string[] = [];
  if (doc.apiVersion !== crd.apiVersion) problems.push(`apiVersion ${doc.apiVersion}, expected ${crd.apiVersion}`);
  if (typeof doc.metadata?.name !== "string") problems.push("metadata.name missing");
  const validate = ajv.compile(crd.spec);
  if (!validate(doc.spec)) {
    for (const e of validate.errors ?? [])
      problems.push(
        `spec${e.instancePath} ${e.message}${e.params && "additionalProperty" in e.params ? ` (${e.params.additionalProperty})` : ""}`,
      );
  }
  return problems;
}

function k8sManifestProblem(doc: Record<string, Yaml>): string | null {
  const Model = KINDS[doc.kind];
  if (!Model) return `no Kubernetes schema for kind ${doc.kind}`;
  try {
    new Model(doc).validate();
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

describe("deploy/kubernetes", () => {
  for (const file of [
    "deployment.yaml",
    "service.yaml",
    "program-cache-pvc.yaml",
    "models-pvc.yaml",
    "fleet-secret.yaml",
  ]) {
    test(`${file} is valid against the Kubernetes schema`, () => {
      expect(k8sManifestProblem(read(`kubernetes/${file}`))).toBeNull();
    });
  }

  test("the Deployment drains gracefully and reads the shared cache", () => {
    const d = read("kubernetes/deployment.yaml");
    const pod = d.spec.template.spec;
    const c = pod.containers[0];
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(30);
    expect(c.readinessProbe.httpGet.path).toBe("/v2/health/ready");
    expect(c.env.map((e: { name: string }) => e.name)).toEqual(
      expect.arrayContaining(["XLASERVE_CACHE__CATALOG", "XLASERVE_CACHE__STORE"]),
    );
    const store = read("kubernetes/fleet-secret.yaml").stringData.store;
    expect(c.volumeMounts.some((m: { mountPath: string }) => m.mountPath === store)).toBe(true);
    expect(d.spec.template.metadata.annotations["prometheus.io/scrape"]).toBe("true");
    expect(read("kubernetes/service.yaml").spec.selector).toEqual(d.spec.selector.matchLabels);
  });

  test("the validator catches what it should (a wrong type, a missing field)", () => {
    const d = read("kubernetes/deployment.yaml");
    d.spec.template.spec.containers[0].ports[0].containerPort = "8080";
    expect(k8sManifestProblem(d)).toContain("containerPort must be integer");
    const noSelector = read("kubernetes/deployment.yaml");
    delete noSelector.spec.selector;
    expect(k8sManifestProblem(noSelector)).toContain("selector");
  });
});

describe("deploy/kserve", () => {
  test("the ClusterServingRuntime is valid against KServe's CRD schema", () => {
    expect(kserveProblems(read("kserve/cluster-serving-runtime.yaml"))).toEqual([]);
  });

  test("the InferenceService example is valid against KServe's CRD schema", () => {
    expect(kserveProblems(read("kserve/inference-service.yaml"))).toEqual([]);
  });

  test("the runtime speaks v2 and grpc-v2, is ready on /v2/health/ready, is scraped, and serves /mnt/models on 8080", () => {
    const rt = read("kserve/cluster-serving-runtime.yaml");
    expect(rt.spec.protocolVersions).toEqual(["v2", "grpc-v2"]);
    const c = rt.spec.containers[0];
    expect(c.readinessProbe.httpGet).toEqual({ path: "/v2/health/ready", port: 8080 });
    expect(c.args).toEqual(expect.arrayContaining(["--repository=/mnt/models", "--port=8080", "--grpc-port=8081"]));
    expect(c.ports.map((p: { name: string; containerPort: number }) => [p.name, p.containerPort])).toEqual([
      ["http1", 8080],
      ["h2c", 8081],
    ]);
    expect(rt.spec.annotations["prometheus.kserve.io/port"]).toBe("8080");
    expect(rt.spec.annotations["prometheus.kserve.io/path"]).toBe("/metrics");
    const isvc = read("kserve/inference-service.yaml");
    expect(isvc.spec.predictor.model.runtime).toBe(rt.metadata.name);
    expect(rt.spec.supportedModelFormats.map((f: { name: string }) => f.name)).toContain(
      isvc.spec.predictor.model.modelFormat.name,
    );
    expect(isvc.spec.predictor.model.protocolVersion).toBe("v2");
  });

  test("the KServe validator catches an unknown field, a wrong type and a bad embedded container", () => {
    const typo = read("kserve/cluster-serving-runtime.yaml");
    typo.spec.protocolVersion = ["v2"];
    expect(kserveProblems(typo).join("\n")).toContain("(protocolVersion)");
    const badType = read("kserve/cluster-serving-runtime.yaml");
    badType.spec.multiModel = "no";
    expect(kserveProblems(badType).join("\n")).toContain("spec/multiModel must be boolean");
    const badContainer = read("kserve/cluster-serving-runtime.yaml");
    badContainer.spec.containers[0].ports[0].containerPort = "http";
    expect(kserveProblems(badContainer).join("\n")).toContain("containerPort must be integer");
    const isvc = read("kserve/inference-service.yaml");
    delete isvc.spec.predictor.model.modelFormat;
    expect(kserveProblems(isvc).join("\n")).toContain("modelFormat");
  });
});

test("the image is built by the set-up script CI runs and starts the worker", () => {
  const dockerfile = readFileSync(join(DEPLOY, "Dockerfile"), "utf8");
  expect(dockerfile).toContain("node scripts/setup.mjs");
  expect(dockerfile).toMatch(/ENTRYPOINT \[.*apps\/worker\/src\/main\.ts"\]/);
  expect(dockerfile).toContain("STOPSIGNAL SIGTERM");
});
