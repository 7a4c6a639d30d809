import { XlaserveError } from "@xlaserve/core";
import { CStruct, keepAlive, readPointerAt, readString } from "../abi/cstruct.ts";
import {
  PJRT_Client_AddressableDevices_Args,
  PJRT_Client_Create_Args,
  PJRT_Client_Destroy_Args,
  PJRT_Client_PlatformName_Args,
  PJRT_Client_PlatformVersion_Args,
  PJRT_DeviceDescription_Attributes_Args,
  PJRT_DeviceDescription_Id_Args,
  PJRT_DeviceDescription_Kind_Args,
  PJRT_Device_GetDescription_Args,
} from "../abi/structs.ts";
import type { PjrtApi } from "../api/pjrt-api.ts";
import { type NamedOption, type NamedValue, readNamedValues, writeNamedValues } from "./named-values.ts";
import { DEFAULT_EVENT_WAIT, type EventWaitPolicy } from "./events.ts";
import { Ownership } from "./ownership.ts";

export interface PjrtDevice {
  /** Index in the client's addressable devices: the `device` number of the backend API. */
  readonly index: number;
  /** PJRT_DeviceDescription_Id. */
  readonly id: number;
  readonly handle: number;
  readonly kind: string;
  readonly attributes: Readonly<Record<string, NamedValue>>;
}

/** A PJRT_Client and what it owns. Destroying it first destroys every buffer and program left. */
export class PjrtClient {
  readonly api: PjrtApi;
  readonly handle: number;
  readonly platformName: string;
  readonly platformVersion: string;
  readonly devices: readonly PjrtDevice[];
  readonly owned: Ownership;
  /** How this client's ready events are awaited (see events.ts). */
  eventWait: EventWaitPolicy = DEFAULT_EVENT_WAIT;
  private destroyed = false;

  private constructor(api: PjrtApi, handle: number) {
    this.api = api;
    this.handle = handle;
    this.owned = new Ownership(api);
    this.platformName = this.readPlatformName();
    this.platformVersion = this.readPlatformVersion();
    this.devices = this.readDevices();
  }

  /** PJRT_Client_Create with the plugin's named options (memory_fraction, preallocate, ...). */
  static create(api: PjrtApi, options: readonly NamedOption[]): PjrtClient {
    const values = writeNamedValues(options);
    const args = new CStruct(PJRT_Client_Create_Args, {
      create_options: options.length ? values.address : 0,
      num_options: options.length,
    });
    api.call("PJRT_Client_Create", args);
    keepAlive(values, args);
    return new PjrtClient(api, args.get("client"));
  }

  get alive(): boolean {
    return !this.destroyed;
  }

  private readPlatformName(): string {
    const args = new CStruct(PJRT_Client_PlatformName_Args, { client: this.handle });
    this.api.call("PJRT_Client_PlatformName", args);
    return readString(args.get("platform_name"), args.get("platform_name_size"));
  }

  private readPlatformVersion(): string {
    const args = new CStruct(PJRT_Client_PlatformVersion_Args, { client: this.handle });
    this.api.call("PJRT_Client_PlatformVersion", args);
    return readString(args.get("platform_version"), args.get("platform_version_size"));
  }

  private readDevices(): PjrtDevice[] {
    const args = new CStruct(PJRT_Client_AddressableDevices_Args, { client: this.handle });
    this.api.call("PJRT_Client_AddressableDevices", args);
    const list = args.get("addressable_devices");
    const count = args.get("num_addressable_devices");
    return Array.from({ length: count }, (_, index) => this.describe(index, readPointerAt(list, index)));
  }

  private describe(index: number, handle: number): PjrtDevice {
    const get = new CStruct(PJRT_Device_GetDescription_Args, { device: handle });
    this.api.call("PJRT_Device_GetDescription", get);
    const description = get.get("device_description");
    const id = new CStruct(PJRT_DeviceDescription_Id_Args, { device_description: description });
    this.api.call("PJRT_DeviceDescription_Id", id);
    const kind = new CStruct(PJRT_DeviceDescription_Kind_Args, { device_description: description });
    this.api.call("PJRT_DeviceDescription_Kind", kind);
    const attrs = new CStruct(PJRT_DeviceDescription_Attributes_Args, { device_description: description });
    this.api.call("PJRT_DeviceDescription_Attributes", attrs);
    return {
      index,
      id: id.get("id"),
      handle,
      kind: readString(kind.get("device_kind"), kind.get("device_kind_size")),
      attributes: readNamedValues(attrs.get("attributes"), attrs.get("num_attributes")),
    };
  }

  device(index = 0): PjrtDevice {
    const device = this.devices[index];
    if (!device) {
      throw new XlaserveError(
        "INVALID_ARGUMENT",
        `device ${index} does not exist (${this.devices.length} addressable)`,
        {
          device: index,
        },
      );
    }
    return device;
  }

  /** Destroys what is left (buffers, programs), then the client. Idempotent. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.owned.destroyAll();
    this.api.call("PJRT_Client_Destroy", new CStruct(PJRT_Client_Destroy_Args, { client: this.handle }));
  }
}
