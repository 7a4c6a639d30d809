/**
 * The status page's recent events carry their messages: a failed request's status and error, a
 * reload's figures, a failed load's reason; every one escaped when rendered. (The page in a
 * browser: tests/e2e/status-page.test.ts.)
 */
import { afterAll, describe, expect, test } from "bun:test";
import { renderStatus } from "../src/status/render.ts";
import type { StatusSnapshot } from "../src/status/snapshot.ts";
import { startHarness } from "./support/harness.ts";
import { affineModel } from "./support/test-models.ts";

const h = startHarness();
afterAll(() => h.stop());

async function snapshot(): Promise<StatusSnapshot> {
  return (await (await fetch(`${h.url}/status.json`)).json()) as StatusSnapshot;
}

describe("status page events", () => {
  test("a failed request's event names its status and error, escaped on the page", async () => {
    await snapshot(); // the starting point
    await Bun.sleep(1100); // the next look takes a new sample
    const bad = await fetch(`${h.url}/v2/models/affine/infer`, {
      method: "POST",
      body: JSON.stringify({
        inputs: [{ name: "<script>x</script>", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }],
      }),
    });
    expect(bad.status).toBe(400);
    const error = ((await bad.json()) as { error: string }).error;
    const s = await snapshot();
    const event = s.events.find((e) => e.kind === "errors" && e.model === "affine");
    expect(event?.text).toBe(`1 failed request, the last: 400 ${error}`);
    expect(error).toContain("<script>x</script>");

    const html = await (await fetch(`${h.url}/`)).text();
    const body = html.slice(0, html.indexOf("<script>\nconst renderStatus"));
    expect(body).toContain("&#60;script&#62;x&#60;/script&#62;");
    expect(body).not.toContain("<script>x</script>");
  });

  test("a reload's event says what the load did, where the model's figures tell", async () => {
    const next = affineModel();
    Object.assign(next, {
      extra: () => ({ generation: 7, loadMs: 41.6, programs: [{ outcome: "hit" }, { outcome: "miss" }] }),
    });
    h.registry.models.set("affine", next);
    await Bun.sleep(1100);
    const s = await snapshot();
    expect(s.events).toContainEqual(
      expect.objectContaining({
        kind: "reloaded",
        model: "affine",
        text: "new version serving: generation 7, loaded in 42 ms, 1 of 2 programs from the cache",
      }),
    );
  });

  test("a failed load's reason is the event's text", async () => {
    const s = await snapshot();
    expect(s.events).toContainEqual({
      t: expect.any(Number),
      kind: "failed",
      model: "broken",
      text: "manifest.yaml: executable_inputs is missing",
    });
    const html = renderStatus({
      ...s,
      events: [{ t: 0, kind: "failed", model: "m<b>", text: 'a "<b>" & c' }],
    });
    expect(html).toContain("<b>m&#60;b&#62;</b> failed: a &#34;&#60;b&#62;&#34; &#38; c");
  });
});
