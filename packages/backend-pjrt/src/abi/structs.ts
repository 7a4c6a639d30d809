import { C, type FieldSpec, layoutUnion } from "./ctypes.ts";
import { defineStruct, type StructDef } from "./struct-def.ts";

/**
 * The PJRT argument structs this backend passes, each declared once as its ordered field list
 * (names and C types as in pjrt_c_api.h, API 0.113). Offsets come from the layout rules in
 * ctypes.ts. Only structs the backend calls are declared: a slot whose struct is missing here
 * cannot be called (see api.ts), which is the point.
 */

/** Every args struct starts with these two fields. */
const HEAD: readonly FieldSpec[] = [
  ["struct_size", C.size_t],
  ["extension_start", C.ptr],
];

function args(name: string, fields: readonly FieldSpec[]): StructDef {
  return defineStruct(name, [...HEAD, ...fields]);
}

export const PJRT_Api_Version = args("PJRT_Api_Version", [
  ["major_version", C.int],
  ["minor_version", C.int],
]);

// ---- errors
export const PJRT_Error_Destroy_Args = args("PJRT_Error_Destroy_Args", [["error", C.ptr]]);
export const PJRT_Error_Message_Args = args("PJRT_Error_Message_Args", [
  ["error", C.ptr],
  ["message", C.ptr],
  ["message_size", C.size_t],
]);
export const PJRT_Error_GetCode_Args = args("PJRT_Error_GetCode_Args", [
  ["error", C.ptr],
  ["code", C.enum],
]);

// ---- named values (the header's anonymous union is named `value` here; same layout)
export const PJRT_NamedValue_Union = layoutUnion("PJRT_NamedValue_Value", [
  ["string_value", C.ptr],
  ["int64_value", C.i64],
  ["int64_array_value", C.ptr],
  ["float_value", C.float],
  ["bool_value", C.bool],
]);
export const PJRT_NamedValue = args("PJRT_NamedValue", [
  ["name", C.ptr],
  ["name_size", C.size_t],
  ["type", C.enum],
  ["value", PJRT_NamedValue_Union],
  ["value_size", C.size_t],
]);

// ---- plugin
export const PJRT_Plugin_Initialize_Args = defineStruct("PJRT_Plugin_Initialize_Args", HEAD);
export const PJRT_Plugin_Attributes_Args = args("PJRT_Plugin_Attributes_Args", [
  ["attributes", C.ptr],
  ["num_attributes", C.size_t],
]);

// ---- events
export const PJRT_Event_Destroy_Args = args("PJRT_Event_Destroy_Args", [["event", C.ptr]]);
export const PJRT_Event_IsReady_Args = args("PJRT_Event_IsReady_Args", [
  ["event", C.ptr],
  ["is_ready", C.bool],
]);
export const PJRT_Event_Error_Args = args("PJRT_Event_Error_Args", [["event", C.ptr]]);
export const PJRT_Event_Await_Args = args("PJRT_Event_Await_Args", [["event", C.ptr]]);
export const PJRT_Event_OnReady_Args = args("PJRT_Event_OnReady_Args", [
  ["event", C.ptr],
  ["callback", C.fnptr],
  ["user_arg", C.ptr],
]);

// ---- client
export const PJRT_Client_Create_Args = args("PJRT_Client_Create_Args", [
  ["create_options", C.ptr],
  ["num_options", C.size_t],
  ["kv_get_callback", C.fnptr],
  ["kv_get_user_arg", C.ptr],
  ["kv_put_callback", C.fnptr],
  ["kv_put_user_arg", C.ptr],
  ["client", C.ptr],
  ["kv_try_get_callback", C.fnptr],
  ["kv_try_get_user_arg", C.ptr],
]);
export const PJRT_Client_Destroy_Args = args("PJRT_Client_Destroy_Args", [["client", C.ptr]]);
export const PJRT_Client_PlatformName_Args = args("PJRT_Client_PlatformName_Args", [
  ["client", C.ptr],
  ["platform_name", C.ptr],
  ["platform_name_size", C.size_t],
]);
export const PJRT_Client_PlatformVersion_Args = args("PJRT_Client_PlatformVersion_Args", [
  ["client", C.ptr],
  ["platform_version", C.ptr],
  ["platform_version_size", C.size_t],
]);
export const PJRT_Client_AddressableDevices_Args = args("PJRT_Client_AddressableDevices_Args", [
  ["client", C.ptr],
  ["addressable_devices", C.ptr],
  ["num_addressable_devices", C.size_t],
]);
export const PJRT_Program = args("PJRT_Program", [
  ["code", C.ptr],
  ["code_size", C.size_t],
  ["format", C.ptr],
  ["format_size", C.size_t],
]);
export const PJRT_Client_Compile_Args = args("PJRT_Client_Compile_Args", [
  ["client", C.ptr],
  ["program", C.ptr],
  ["compile_options", C.ptr],
  ["compile_options_size", C.size_t],
  ["executable", C.ptr],
]);
export const PJRT_Client_BufferFromHostBuffer_Args = args("PJRT_Client_BufferFromHostBuffer_Args", [
  ["client", C.ptr],
  ["data", C.ptr],
  ["type", C.enum],
  ["dims", C.ptr],
  ["num_dims", C.size_t],
  ["byte_strides", C.ptr],
  ["num_byte_strides", C.size_t],
  ["host_buffer_semantics", C.enum],
  ["device", C.ptr],
  ["memory", C.ptr],
  ["device_layout", C.ptr],
  ["done_with_host_buffer", C.ptr],
  ["buffer", C.ptr],
]);

// ---- device descriptions and devices
export const PJRT_DeviceDescription_Id_Args = args("PJRT_DeviceDescription_Id_Args", [
  ["device_description", C.ptr],
  ["id", C.int],
]);
export const PJRT_DeviceDescription_Attributes_Args = args("PJRT_DeviceDescription_Attributes_Args", [
  ["device_description", C.ptr],
  ["num_attributes", C.size_t],
  ["attributes", C.ptr],
]);
export const PJRT_DeviceDescription_Kind_Args = args("PJRT_DeviceDescription_Kind_Args", [
  ["device_description", C.ptr],
  ["device_kind", C.ptr],
  ["device_kind_size", C.size_t],
]);
export const PJRT_Device_GetDescription_Args = args("PJRT_Device_GetDescription_Args", [
  ["device", C.ptr],
  ["device_description", C.ptr],
]);
export const PJRT_Device_MemoryStats_Args = args("PJRT_Device_MemoryStats_Args", [
  ["device", C.ptr],
  ["bytes_in_use", C.i64],
  ["peak_bytes_in_use", C.i64],
  ["peak_bytes_in_use_is_set", C.bool],
  ["num_allocs", C.i64],
  ["num_allocs_is_set", C.bool],
  ["largest_alloc_size", C.i64],
  ["largest_alloc_size_is_set", C.bool],
  ["bytes_limit", C.i64],
  ["bytes_limit_is_set", C.bool],
  ["bytes_reserved", C.i64],
  ["bytes_reserved_is_set", C.bool],
  ["peak_bytes_reserved", C.i64],
  ["peak_bytes_reserved_is_set", C.bool],
  ["bytes_reservable_limit", C.i64],
  ["bytes_reservable_limit_is_set", C.bool],
  ["largest_free_block_bytes", C.i64],
  ["largest_free_block_bytes_is_set", C.bool],
  ["pool_bytes", C.i64],
  ["pool_bytes_is_set", C.bool],
  ["peak_pool_bytes", C.i64],
  ["peak_pool_bytes_is_set", C.bool],
  ["peak_allocated_bytes", C.i64],
  ["peak_allocated_bytes_is_set", C.bool],
]);
export const PJRT_Device_ClearMemoryStats_Args = args("PJRT_Device_ClearMemoryStats_Args", [["device", C.ptr]]);

// ---- executables
export const PJRT_Executable_Destroy_Args = args("PJRT_Executable_Destroy_Args", [["executable", C.ptr]]);
export const PJRT_LoadedExecutable_Destroy_Args = args("PJRT_LoadedExecutable_Destroy_Args", [["executable", C.ptr]]);
export const PJRT_LoadedExecutable_GetExecutable_Args = args("PJRT_LoadedExecutable_GetExecutable_Args", [
  ["loaded_executable", C.ptr],
  ["executable", C.ptr],
]);
export const PJRT_Executable_NumOutputs_Args = args("PJRT_Executable_NumOutputs_Args", [
  ["executable", C.ptr],
  ["num_outputs", C.size_t],
]);
export const PJRT_Executable_Serialize_Args = args("PJRT_Executable_Serialize_Args", [
  ["executable", C.ptr],
  ["serialized_bytes", C.ptr],
  ["serialized_bytes_size", C.size_t],
  ["serialized_executable", C.ptr],
  ["serialized_executable_deleter", C.fnptr],
]);
// The 0.113 header goes on with `load_options`; the 0.115 CUDA plugin's struct ends here (64
// bytes: it logs "expected 64, got 72" for the longer one). xlaserve never sets load options, and
// a shorter struct_size is what a plugin with the longer struct reads as "not given".
export const PJRT_Executable_DeserializeAndLoad_Args = args("PJRT_Executable_DeserializeAndLoad_Args", [
  ["client", C.ptr],
  ["serialized_executable", C.ptr],
  ["serialized_executable_size", C.size_t],
  ["loaded_executable", C.ptr],
  ["overridden_serialized_compile_options", C.ptr],
  ["overridden_serialized_compile_options_size", C.size_t],
]);
export const PJRT_ExecuteOptions = args("PJRT_ExecuteOptions", [
  ["send_callbacks", C.ptr],
  ["recv_callbacks", C.ptr],
  ["num_send_ops", C.size_t],
  ["num_recv_ops", C.size_t],
  ["launch_id", C.int],
  ["non_donatable_input_indices", C.ptr],
  ["num_non_donatable_input_indices", C.size_t],
  ["context", C.ptr],
  ["call_location", C.ptr],
  ["num_tasks", C.size_t],
  ["task_ids", C.ptr],
  ["incarnation_ids", C.ptr],
  ["multi_slice_config", C.ptr],
  ["use_major_to_minor_data_layout_for_callbacks", C.bool],
  ["hlo_output_callbacks", C.ptr],
  ["num_hlo_output_callbacks", C.size_t],
]);
export const PJRT_LoadedExecutable_Execute_Args = args("PJRT_LoadedExecutable_Execute_Args", [
  ["executable", C.ptr],
  ["options", C.ptr],
  ["argument_lists", C.ptr],
  ["num_devices", C.size_t],
  ["num_args", C.size_t],
  ["output_lists", C.ptr],
  ["device_complete_events", C.ptr],
  ["execute_device", C.ptr],
]);

// ---- buffers
export const PJRT_Buffer_Destroy_Args = args("PJRT_Buffer_Destroy_Args", [["buffer", C.ptr]]);
export const PJRT_Buffer_ElementType_Args = args("PJRT_Buffer_ElementType_Args", [
  ["buffer", C.ptr],
  ["type", C.enum],
]);
export const PJRT_Buffer_Dimensions_Args = args("PJRT_Buffer_Dimensions_Args", [
  ["buffer", C.ptr],
  ["dims", C.ptr],
  ["num_dims", C.size_t],
]);
export const PJRT_Buffer_ToHostBuffer_Args = args("PJRT_Buffer_ToHostBuffer_Args", [
  ["src", C.ptr],
  ["host_layout", C.ptr],
  ["dst", C.ptr],
  ["dst_size", C.size_t],
  ["event", C.ptr],
]);
export const PJRT_Buffer_ReadyEvent_Args = args("PJRT_Buffer_ReadyEvent_Args", [
  ["buffer", C.ptr],
  ["event", C.ptr],
]);
export const PJRT_Buffer_OnDeviceSizeInBytes_Args = args("PJRT_Buffer_OnDeviceSizeInBytes_Args", [
  ["buffer", C.ptr],
  ["on_device_size_in_bytes", C.size_t],
]);

/** Which args struct each callable slot takes. A slot absent here is never called. */
export const SLOT_ARGS = {
  PJRT_Error_Destroy: PJRT_Error_Destroy_Args,
  PJRT_Error_Message: PJRT_Error_Message_Args,
  PJRT_Error_GetCode: PJRT_Error_GetCode_Args,
  PJRT_Plugin_Initialize: PJRT_Plugin_Initialize_Args,
  PJRT_Plugin_Attributes: PJRT_Plugin_Attributes_Args,
  PJRT_Event_Destroy: PJRT_Event_Destroy_Args,
  PJRT_Event_IsReady: PJRT_Event_IsReady_Args,
  PJRT_Event_Error: PJRT_Event_Error_Args,
  PJRT_Event_Await: PJRT_Event_Await_Args,
  PJRT_Event_OnReady: PJRT_Event_OnReady_Args,
  PJRT_Client_Create: PJRT_Client_Create_Args,
  PJRT_Client_Destroy: PJRT_Client_Destroy_Args,
  PJRT_Client_PlatformName: PJRT_Client_PlatformName_Args,
  PJRT_Client_PlatformVersion: PJRT_Client_PlatformVersion_Args,
  PJRT_Client_AddressableDevices: PJRT_Client_AddressableDevices_Args,
  PJRT_Client_Compile: PJRT_Client_Compile_Args,
  PJRT_Client_BufferFromHostBuffer: PJRT_Client_BufferFromHostBuffer_Args,
  PJRT_DeviceDescription_Id: PJRT_DeviceDescription_Id_Args,
  PJRT_DeviceDescription_Attributes: PJRT_DeviceDescription_Attributes_Args,
  PJRT_DeviceDescription_Kind: PJRT_DeviceDescription_Kind_Args,
  PJRT_Device_GetDescription: PJRT_Device_GetDescription_Args,
  PJRT_Device_MemoryStats: PJRT_Device_MemoryStats_Args,
  PJRT_Device_ClearMemoryStats: PJRT_Device_ClearMemoryStats_Args,
  PJRT_Executable_Destroy: PJRT_Executable_Destroy_Args,
  PJRT_Executable_NumOutputs: PJRT_Executable_NumOutputs_Args,
  PJRT_Executable_Serialize: PJRT_Executable_Serialize_Args,
  PJRT_Executable_DeserializeAndLoad: PJRT_Executable_DeserializeAndLoad_Args,
  PJRT_LoadedExecutable_Destroy: PJRT_LoadedExecutable_Destroy_Args,
  PJRT_LoadedExecutable_GetExecutable: PJRT_LoadedExecutable_GetExecutable_Args,
  PJRT_LoadedExecutable_Execute: PJRT_LoadedExecutable_Execute_Args,
  PJRT_Buffer_Destroy: PJRT_Buffer_Destroy_Args,
  PJRT_Buffer_ElementType: PJRT_Buffer_ElementType_Args,
  PJRT_Buffer_Dimensions: PJRT_Buffer_Dimensions_Args,
  PJRT_Buffer_ToHostBuffer: PJRT_Buffer_ToHostBuffer_Args,
  PJRT_Buffer_OnDeviceSizeInBytes: PJRT_Buffer_OnDeviceSizeInBytes_Args,
  PJRT_Buffer_ReadyEvent: PJRT_Buffer_ReadyEvent_Args,
} as const satisfies Record<string, StructDef>;

export type CallableSlot = keyof typeof SLOT_ARGS;

/** Every declared struct, for the layout tests and the mock's generated header. */
export const ALL_STRUCTS: readonly StructDef[] = [
  PJRT_Api_Version,
  PJRT_NamedValue,
  PJRT_Program,
  PJRT_ExecuteOptions,
  ...Object.values(SLOT_ARGS).filter((d, i, all) => all.indexOf(d) === i),
];
