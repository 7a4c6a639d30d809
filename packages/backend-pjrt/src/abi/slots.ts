import { C } from "./ctypes.ts";
import { defineStruct, type StructDef } from "./struct-def.ts";
import { PJRT_Api_Version } from "./structs.ts";

/**
 * The PJRT_Api function table, declared per supported layout as the ordered list of its slots
 * (one function pointer each), after the table's header: struct_size, extension_start and the
 * embedded PJRT_Api_Version. New slots are only ever appended within a major version, so a layout
 * also describes every older minor's prefix.
 */
const SLOTS_0_113 = [
  "PJRT_Error_Destroy",
  "PJRT_Error_Message",
  "PJRT_Error_GetCode",
  "PJRT_Plugin_Initialize",
  "PJRT_Plugin_Attributes",
  "PJRT_Event_Destroy",
  "PJRT_Event_IsReady",
  "PJRT_Event_Error",
  "PJRT_Event_Await",
  "PJRT_Event_OnReady",
  "PJRT_Client_Create",
  "PJRT_Client_Destroy",
  "PJRT_Client_PlatformName",
  "PJRT_Client_ProcessIndex",
  "PJRT_Client_PlatformVersion",
  "PJRT_Client_Devices",
  "PJRT_Client_AddressableDevices",
  "PJRT_Client_LookupDevice",
  "PJRT_Client_LookupAddressableDevice",
  "PJRT_Client_AddressableMemories",
  "PJRT_Client_Compile",
  "PJRT_Client_DefaultDeviceAssignment",
  "PJRT_Client_BufferFromHostBuffer",
  "PJRT_DeviceDescription_Id",
  "PJRT_DeviceDescription_ProcessIndex",
  "PJRT_DeviceDescription_Attributes",
  "PJRT_DeviceDescription_Kind",
  "PJRT_DeviceDescription_DebugString",
  "PJRT_DeviceDescription_ToString",
  "PJRT_Device_GetDescription",
  "PJRT_Device_IsAddressable",
  "PJRT_Device_LocalHardwareId",
  "PJRT_Device_AddressableMemories",
  "PJRT_Device_DefaultMemory",
  "PJRT_Device_MemoryStats",
  "PJRT_Memory_Id",
  "PJRT_Memory_Kind",
  "PJRT_Memory_DebugString",
  "PJRT_Memory_ToString",
  "PJRT_Memory_AddressableByDevices",
  "PJRT_Executable_Destroy",
  "PJRT_Executable_Name",
  "PJRT_Executable_NumReplicas",
  "PJRT_Executable_NumPartitions",
  "PJRT_Executable_NumOutputs",
  "PJRT_Executable_SizeOfGeneratedCodeInBytes",
  "PJRT_Executable_GetCostAnalysis",
  "PJRT_Executable_OutputMemoryKinds",
  "PJRT_Executable_OptimizedProgram",
  "PJRT_Executable_Serialize",
  "PJRT_LoadedExecutable_Destroy",
  "PJRT_LoadedExecutable_GetExecutable",
  "PJRT_LoadedExecutable_AddressableDevices",
  "PJRT_LoadedExecutable_Delete",
  "PJRT_LoadedExecutable_IsDeleted",
  "PJRT_LoadedExecutable_Execute",
  "PJRT_Executable_DeserializeAndLoad",
  "PJRT_LoadedExecutable_Fingerprint",
  "PJRT_Buffer_Destroy",
  "PJRT_Buffer_ElementType",
  "PJRT_Buffer_Dimensions",
  "PJRT_Buffer_UnpaddedDimensions",
  "PJRT_Buffer_DynamicDimensionIndices",
  "PJRT_Buffer_GetMemoryLayout",
  "PJRT_Buffer_OnDeviceSizeInBytes",
  "PJRT_Buffer_Device",
  "PJRT_Buffer_Memory",
  "PJRT_Buffer_Delete",
  "PJRT_Buffer_IsDeleted",
  "PJRT_Buffer_CopyToDevice",
  "PJRT_Buffer_ToHostBuffer",
  "PJRT_Buffer_IsOnCpu",
  "PJRT_Buffer_ReadyEvent",
  "PJRT_Buffer_UnsafePointer",
  "PJRT_Buffer_IncreaseExternalReferenceCount",
  "PJRT_Buffer_DecreaseExternalReferenceCount",
  "PJRT_Buffer_OpaqueDeviceMemoryDataPointer",
  "PJRT_CopyToDeviceStream_Destroy",
  "PJRT_CopyToDeviceStream_AddChunk",
  "PJRT_CopyToDeviceStream_TotalBytes",
  "PJRT_CopyToDeviceStream_GranuleSize",
  "PJRT_CopyToDeviceStream_CurrentBytes",
  "PJRT_TopologyDescription_Create",
  "PJRT_TopologyDescription_Destroy",
  "PJRT_TopologyDescription_PlatformName",
  "PJRT_TopologyDescription_PlatformVersion",
  "PJRT_TopologyDescription_GetDeviceDescriptions",
  "PJRT_TopologyDescription_Serialize",
  "PJRT_TopologyDescription_Attributes",
  "PJRT_Compile",
  // From here on, slots were appended one minor version at a time.
  "PJRT_Executable_OutputElementTypes",
  "PJRT_Executable_OutputDimensions",
  "PJRT_Buffer_CopyToMemory",
  "PJRT_Client_CreateViewOfDeviceBuffer",
  "PJRT_Executable_Fingerprint",
  "PJRT_Client_TopologyDescription",
  "PJRT_Executable_GetCompiledMemoryStats",
  "PJRT_Memory_Kind_Id",
  "PJRT_ExecuteContext_Create",
  "PJRT_ExecuteContext_Destroy",
  "PJRT_Buffer_CopyRawToHost",
  "PJRT_AsyncHostToDeviceTransferManager_Destroy",
  "PJRT_AsyncHostToDeviceTransferManager_TransferData",
  "PJRT_Client_CreateBuffersForAsyncHostToDevice",
  "PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer",
  "PJRT_AsyncHostToDeviceTransferManager_Device",
  "PJRT_AsyncHostToDeviceTransferManager_BufferCount",
  "PJRT_AsyncHostToDeviceTransferManager_BufferSize",
  "PJRT_AsyncHostToDeviceTransferManager_SetBufferError",
  "PJRT_AsyncHostToDeviceTransferManager_AddMetadata",
  "PJRT_Client_DmaMap",
  "PJRT_Client_DmaUnmap",
  "PJRT_Client_CreateUninitializedBuffer",
  "PJRT_Client_UpdateGlobalProcessInfo",
  "PJRT_TopologyDescription_Deserialize",
  "PJRT_Client_CreateAliasBuffer",
  "PJRT_Client_FulfillAliasBuffer",
  "PJRT_LoadedExecutable_GetDeviceAssignment",
  "PJRT_Client_CreateErrorBuffer",
  "PJRT_AsyncHostToDeviceTransferManager_TransferLiteral",
  "PJRT_Buffer_CopyRawToHostFuture",
  "PJRT_Device_PoisonExecution",
  "PJRT_Device_CreateAsyncTrackingEvent",
  "PJRT_AsyncTrackingEvent_Destroy",
  "PJRT_Executable_GetCompileOptions",
  "PJRT_Buffer_DonateWithControlDependency",
  "PJRT_Event_Create",
  "PJRT_Event_Set",
  "PJRT_Device_GetAttributes",
  "PJRT_Client_Load",
  "PJRT_LoadedExecutable_AddressableDeviceLogicalIds",
  "PJRT_Buffer_Bitcast",
  "PJRT_Error_ForEachPayload",
  "PJRT_TopologyDescription_Fingerprint",
  "PJRT_Executable_ParameterMemoryKinds",
  "PJRT_Device_ClearMemoryStats",
  "PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace",
  "PJRT_TopologyDescription_GetMemorySpaceKindIds",
] as const;

export interface ApiLayout {
  /** Header version the slot list was read from. */
  readonly declaredMinor: number;
  readonly major: number;
  readonly slots: readonly string[];
  /** The PJRT_Api struct with one fnptr field per slot. */
  readonly table: StructDef;
}

function apiLayout(major: number, declaredMinor: number, slots: readonly string[]): ApiLayout {
  const table = defineStruct(`PJRT_Api_${major}_${declaredMinor}`, [
    ["struct_size", C.size_t],
    ["extension_start", C.ptr],
    ["pjrt_api_version", PJRT_Api_Version.layout],
    ...slots.map((s) => [s, C.fnptr] as const),
  ]);
  return { major, declaredMinor, slots, table };
}

export const LAYOUT_0_113 = apiLayout(0, 113, SLOTS_0_113);

/**
 * (major, minor, struct_size) triples the bindings were verified against, with the layout each
 * uses. A plugin reporting anything else is refused (ARCHITECTURE rule 1).
 * - 0.113 / 1144: the header the bindings were written from (computed, checked by the tests).
 * - 0.115 / 1144: the jax-cuda13-pjrt plugin on the H200 host; 0.114 and 0.115 added no slots,
 *   and the GPU tests drive every slot the backend uses through it.
 */
export interface VerifiedLayout {
  readonly major: number;
  readonly minor: number;
  readonly structSize: number;
  readonly layout: ApiLayout;
  readonly verifiedOn: string;
}

export const VERIFIED_LAYOUTS: readonly VerifiedLayout[] = [
  { major: 0, minor: 113, structSize: 1144, layout: LAYOUT_0_113, verifiedOn: "pjrt_c_api.h 0.113" },
  { major: 0, minor: 115, structSize: 1144, layout: LAYOUT_0_113, verifiedOn: "jax-cuda13-pjrt on NVIDIA H200" },
];

/** The major version the bindings speak. */
export const SUPPORTED_MAJOR = 0;
