import { afterAll, describe, expect, test } from "bun:test";
import { startHarness } from "./support/harness.ts";

const TOKEN = "s3cret-token";
const h = startHarness({ authToken: TOKEN });
const open = startHarness();
afterAll(async () => {
  await h.stop();
  await open.stop();
});

const post = async (base: string, path: string, headers: Record<string, string> = {}, body?: string) => {
  const r = await fetch(base + path, { method: "POST", headers, body });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined, headers: r.headers };
};
const auth = { authorization: `Bearer ${TOKEN}` };

describe("model repository extension", () => {
  test("index lists every bundle with state and reason; ready filter", async () => {
    const all = await post(h.url, "/v2/repository/index");
    expect(all.status).toBe(200);
    expect(all.body).toContainEqual({ name: "affine", version: "1", state: "READY", reason: "" });
    expect(all.body).toContainEqual({ name: "cold", version: "1", state: "LOADING", reason: "warming up" });
    expect(all.body).toContainEqual({
      name: "broken",
      version: "1",
      state: "UNAVAILABLE",
      reason: "manifest.yaml: executable_inputs is missing",
    });
    const ready = await post(h.url, "/v2/repository/index", { "content-type": "application/json" }, '{"ready": true}');
    expect(ready.body.every((e: { state: string }) => e.state === "READY")).toBe(true);
    expect(ready.body.length).toBe(all.body.length - 2);
    const bad = await post(h.url, "/v2/repository/index", {}, '{"ready": "yes"}');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain("ready must be true or false");
  });

  test("load/unload without a configured token are refused with 403", async () => {
    const r = await post(open.url, "/v2/repository/models/affine/unload", auth);
    expect(r.status).toBe(403);
    expect(r.body.error).toContain("set an auth token (XLASERVE_AUTH_TOKEN");
    expect(open.registry.calls).toEqual([]);
  });

  test("load/unload need the bearer token: 401 without or with a wrong one", async () => {
    const none = await post(h.url, "/v2/repository/models/affine/unload");
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toContain("Bearer");
    expect(none.body.error).toContain("Authorization: Bearer");
    const wrong = await post(h.url, "/v2/repository/models/affine/unload", { authorization: "Bearer nope" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe("the bearer token is not valid");
    const basic = await post(h.url, "/v2/repository/models/affine/unload", { authorization: `Basic ${TOKEN}` });
    expect(basic.status).toBe(401);
    expect(h.registry.calls).toEqual([]);
  });

  test("with the token: unload, load back, errors mapped", async () => {
    const unload = await post(h.url, "/v2/repository/models/affine/unload", auth);
    expect(unload.status).toBe(200);
    expect((await fetch(`${h.url}/v2/models/affine`)).status).toBe(404);
    const load = await post(
      h.url,
      "/v2/repository/models/affine/load",
      { ...auth, "content-type": "application/json" },
      "{}",
    );
    expect(load.status).toBe(200);
    expect((await fetch(`${h.url}/v2/models/affine`)).status).toBe(200);
    const missing = await post(h.url, "/v2/repository/models/ghost/load", auth);
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe('no bundle "ghost"');
    const broken = await post(h.url, "/v2/repository/models/broken/load", auth);
    expect(broken.status).toBe(500);
    expect(broken.body.error).toContain("executable_inputs");
    const override = await post(h.url, "/v2/repository/models/affine/load", auth, '{"parameters": {"config": "{}"}}');
    expect(override.status).toBe(400);
    expect(h.registry.calls).toEqual(["unload affine", "load affine", "load ghost", "load broken"]);
  });
});
