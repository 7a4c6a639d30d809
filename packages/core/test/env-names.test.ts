/**
 * The environment's names: the auth token has one name that works (and the one the 403 message
 * gives), the documented XLASERVE_HOST works, and an XLASERVE_* variable that names nothing is
 * warned about with the closest known name.
 */
import { describe, expect, test } from "bun:test";
import { envWarnings, loadConfig } from "../src/index.ts";

describe("XLASERVE_* environment names", () => {
  test("XLASERVE_AUTH_TOKEN and XLASERVE_HOST set their settings", () => {
    const config = loadConfig({ env: { XLASERVE_AUTH_TOKEN: "s3cret", XLASERVE_HOST: "0.0.0.0" } });
    expect(config.server.authToken).toBe("s3cret");
    expect(config.server.host).toBe("0.0.0.0");
  });

  test("a misspelt variable is warned about with the name it most likely meant", () => {
    const warnings = envWarnings({ XLASERVE_AUTH_TOKN: "x", XLASERVE_PROT: "9000", XLASERVE_ENGINE_THRED: "0" });
    expect(warnings).toEqual([
      expect.stringContaining(
        "XLASERVE_AUTH_TOKN is not a variable xlaserve reads (ignored); did you mean XLASERVE_AUTH_TOKEN?",
      ),
      expect.stringContaining(
        "XLASERVE_ENGINE_THRED is not a variable xlaserve reads (ignored); did you mean XLASERVE_ENGINE_THREAD?",
      ),
      expect.stringContaining("XLASERVE_PROT is not a variable xlaserve reads (ignored); did you mean XLASERVE_PORT?"),
    ]);
  });

  test("known names, settings in the generic form and unrelated variables draw no warning", () => {
    expect(
      envWarnings({
        XLASERVE_AUTH_TOKEN: "x",
        XLASERVE_SERVER__AUTH_TOKEN: "x",
        XLASERVE_PJRT__LOAD_THREADS: "2",
        XLASERVE_ENGINE_THREAD: "0",
        XLASERVE_INLINE_MAX_US: "0",
        XLASERVE_BLAS_THREADS: "2",
        PATH: "/usr/bin",
      }),
    ).toEqual([]);
  });

  test("a generic-form name that is no setting is an error that suggests the setting", () => {
    expect(() => loadConfig({ env: { XLASERVE_SERVER__AUTH_TOKN: "x" } })).toThrow(
      "did you mean XLASERVE_SERVER__AUTH_TOKEN",
    );
  });
});
