// A fresh virtual environment at `venv` with `packages` installed by pip, over the machine's own
// site packages (pip then takes what is already there, numpy or jax, instead of asking an index
// for it). True when pip finished; false, with the reason logged, where no index answered.
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";

export function pipVenv({ venv, packages, timeoutMs, note = "", log }) {
  const python = join(venv, "bin", "python");
  try {
    rmSync(venv, { recursive: true, force: true });
    log(`creating ${venv} with ${packages.join(", ")} (pip${note})`);
    execFileSync("python3", ["-m", "venv", "--system-site-packages", venv], { stdio: "ignore" });
    execFileSync(python, ["-m", "pip", "install", "-q", "--retries", "0", "--timeout", "20", ...packages], {
      stdio: ["ignore", "ignore", "ignore"],
      timeout: timeoutMs,
    });
    return true;
  } catch {
    log("pip could not install them (no package index reachable?)");
    return false;
  }
}
