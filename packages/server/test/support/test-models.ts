import {
  type DType,
  DTYPES,
  type ErrorCode,
  type HostTensor,
  type TensorSpec,
  XlaserveError,
  allocTyped,
  dtypeInfo,
} from "@xlaserve/core";
import type { InferRequest, ModelStats, ServedModel } from "../../src/contract.ts";
import { spec } from "./specs.ts";

type Compute = (inputs: ReadonlyMap<string, HostTensor>) => Map<string, HostTensor> | Promise<Map<string, HostTensor>>;

interface Figure {
  count: number;
  ns: number;
}

/** A served model over a plain function, keeping Triton-style statistics like a real one. */
export class FunctionModel implements ServedModel {
  readonly platform = "xlaserve_test";
  readyFlag = true;
  private inferences = 0;
  private executions = 0;
  private last = 0;
  private readonly success: Figure = { count: 0, ns: 0 };
  private readonly fail: Figure = { count: 0, ns: 0 };
  private readonly computeInfer: Figure = { count: 0, ns: 0 };
  /** The last request the model received, for tests that look at what the codec decoded. */
  lastRequest: InferRequest | undefined;

  constructor(
    readonly name: string,
    readonly inputs: readonly TensorSpec[],
    readonly outputs: readonly TensorSpec[],
    private readonly compute: Compute,
    readonly compiledBatchSizes: readonly number[] = [1, 4, 8],
    readonly version = "1",
  ) {}

  get maxBatchSize(): number {
    return Math.max(...this.compiledBatchSizes);
  }

  ready(): boolean {
    return this.readyFlag;
  }

  extra(): Record<string, unknown> {
    return { engine: "test", weight_bytes: 0 };
  }

  async infer(request: InferRequest): Promise<Map<string, HostTensor>> {
    this.lastRequest = request;
    const start = Bun.nanoseconds();
    try {
      const out = await this.compute(request.inputs);
      const ns = Bun.nanoseconds() - start;
      const first = [...request.inputs.values()][0];
      const batchAxis = this.inputs[0]?.batchAxis;
      this.inferences += batchAxis === null || batchAxis === undefined ? 1 : (first?.shape[batchAxis] ?? 1);
      this.executions += 1;
      this.success.count += 1;
      this.success.ns += ns;
      this.computeInfer.count += 1;
      this.computeInfer.ns += ns;
      this.last = Date.now();
      return out;
    } catch (error) {
      this.fail.count += 1;
      this.fail.ns += Bun.nanoseconds() - start;
      throw error;
    }
  }

  stats(): ModelStats {
    const none = { count: 0, ns: 0 };
    return {
      inferenceCount: this.inferences,
      executionCount: this.executions,
      lastInference: this.last,
      success: { ...this.success },
      fail: { ...this.fail },
      queue: none,
      computeInput: none,
      computeInfer: { ...this.computeInfer },
      computeOutput: none,
      batches: {},
    };
  }
}

/** y = 2x + 1 on FP32 [-1, 4], plus each row's sum of y as FP64 [-1]. */
export function affineModel(): FunctionModel {
  return new FunctionModel(
    "affine",
    [spec("x", "f32", [-1, 4])],
    [spec("y", "f32", [-1, 4]), spec("row_sum", "f64", [-1])],
    (inputs) => {
      const x = inputs.get("x") as HostTensor;
      const xs = x.data as Float32Array;
      const y = new Float32Array(xs.length);
      for (let i = 0; i < xs.length; i++) y[i] = 2 * (xs[i] as number) + 1;
      const rows = x.shape[0] as number;
      const sums = new Float64Array(rows);
      for (let r = 0; r < rows; r++)
        for (let c = 0; c < 4; c++) sums[r] = (sums[r] as number) + (y[r * 4 + c] as number);
      return new Map([
        ["y", { dtype: "f32", shape: [rows, 4], data: y }],
        ["row_sum", { dtype: "f64", shape: [rows], data: sums }],
      ]);
    },
    [1, 8],
  );
}

/** Every client-visible dtype, with its KServe name. */
export const CLIENT_DTYPES: readonly DType[] = DTYPES.filter((d) => dtypeInfo(d).clientVisible);

/** echo_<kserve name, lower case>: returns its input "in" ([-1, 3]) unchanged as "out". */
export function echoModel(dtype: DType): FunctionModel {
  const name = `echo_${(dtypeInfo(dtype).kserve as string).toLowerCase()}`;
  return new FunctionModel(name, [spec("in", dtype, [-1, 3])], [spec("out", dtype, [-1, 3])], (inputs) => {
    const t = inputs.get("in") as HostTensor;
    const copy = allocTyped(dtype, t.data.length);
    (copy as Uint8Array).set(t.data as Uint8Array);
    return new Map([["out", { dtype, shape: [...t.shape], data: copy }]]);
  });
}

/** Two inputs of different dtypes: c = a + b (FP32 [-1, 2] + INT32 [-1, 2]). */
export function sumModel(): FunctionModel {
  return new FunctionModel(
    "sum",
    [spec("a", "f32", [-1, 2]), spec("b", "i32", [-1, 2])],
    [spec("c", "f32", [-1, 2])],
    (inputs) => {
      const a = inputs.get("a") as HostTensor;
      const b = inputs.get("b") as HostTensor;
      const c = new Float32Array(a.data.length);
      for (let i = 0; i < c.length; i++) c[i] = (a.data[i] as number) + (b.data[i] as number);
      return new Map([["c", { dtype: "f32", shape: [...a.shape], data: c }]]);
    },
  );
}

/** Codes `faulty` throws, indexed by its INT32 input "code" (no batch axis). */
export const FAULT_CODES: readonly ErrorCode[] = [
  "INVALID_ARGUMENT",
  "NOT_FOUND",
  "UNAVAILABLE",
  "SHUTTING_DOWN",
  "QUEUE_FULL",
  "UNAUTHORIZED",
  "OUT_OF_MEMORY",
  "EXECUTE_FAILED",
];

export function faultyModel(): FunctionModel {
  return new FunctionModel("faulty", [spec("code", "i32", [1])], [spec("never", "i32", [1])], (inputs) => {
    const code = FAULT_CODES[(inputs.get("code") as HostTensor).data[0] as number] ?? "INTERNAL";
    throw new XlaserveError(code, `faulty model raised ${code}`);
  });
}
