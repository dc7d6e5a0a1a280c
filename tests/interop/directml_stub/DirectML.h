/* A stand-in for DirectML.h, for compiling dmlpy's emitted C++ with mingw-w64 on Linux (tests only).
 *
 * The types come from dmlpy/dml_types.h (same names, values and layout as DirectML.h); the D3D12 types
 * from mingw-w64's own <d3d12.h>. The DirectML interfaces are declared here with the methods, argument
 * types and inheritance of DirectML.h's documentation
 * (https://learn.microsoft.com/windows/win32/api/directml/), enough to type-check calls. The interface
 * ids are placeholders: this header is for compiling, never for linking a program that runs.
 */
#pragma once
#include <windows.h>
#include <d3d12.h>
#include "dmlpy/dml_types.h"


struct IDMLObject : public IUnknown {
    virtual HRESULT STDMETHODCALLTYPE GetPrivateData(REFGUID guid, UINT* dataSize, void* data) = 0;
    virtual HRESULT STDMETHODCALLTYPE SetPrivateData(REFGUID guid, UINT dataSize, const void* data) = 0;
    virtual HRESULT STDMETHODCALLTYPE SetPrivateDataInterface(REFGUID guid, IUnknown* data) = 0;
    virtual HRESULT STDMETHODCALLTYPE SetName(PCWSTR name) = 0;
};
struct IDMLDeviceChild : public IDMLObject {
    virtual HRESULT STDMETHODCALLTYPE GetDevice(REFIID riid, void** device) = 0;
};
struct IDMLPageable : public IDMLDeviceChild {};
struct IDMLOperator : public IDMLDeviceChild {};
struct IDMLDispatchable : public IDMLPageable {
    virtual DML_BINDING_PROPERTIES STDMETHODCALLTYPE GetBindingProperties() = 0;
};
struct IDMLCompiledOperator : public IDMLDispatchable {};
struct IDMLOperatorInitializer : public IDMLDispatchable {
    virtual HRESULT STDMETHODCALLTYPE Reset(UINT operatorCount, IDMLCompiledOperator* const* operators) = 0;
};
struct IDMLBindingTable : public IDMLDeviceChild {
    virtual void STDMETHODCALLTYPE BindInputs(UINT bindingCount, const DML_BINDING_DESC* bindings) = 0;
    virtual void STDMETHODCALLTYPE BindOutputs(UINT bindingCount, const DML_BINDING_DESC* bindings) = 0;
    virtual void STDMETHODCALLTYPE BindTemporaryResource(const DML_BINDING_DESC* binding) = 0;
    virtual void STDMETHODCALLTYPE BindPersistentResource(const DML_BINDING_DESC* binding) = 0;
    virtual HRESULT STDMETHODCALLTYPE Reset(const DML_BINDING_TABLE_DESC* desc) = 0;
};
struct IDMLCommandRecorder : public IDMLDeviceChild {
    virtual void STDMETHODCALLTYPE RecordDispatch(ID3D12CommandList* commandList, IDMLDispatchable* dispatchable, IDMLBindingTable* bindings) = 0;
};
struct IDMLDevice : public IDMLObject {
    virtual HRESULT STDMETHODCALLTYPE CheckFeatureSupport(DML_FEATURE feature, UINT featureQueryDataSize, const void* featureQueryData, UINT featureSupportDataSize, void* featureSupportData) = 0;
    virtual HRESULT STDMETHODCALLTYPE CreateOperator(const DML_OPERATOR_DESC* desc, REFIID riid, void** ppv) = 0;
    virtual HRESULT STDMETHODCALLTYPE CompileOperator(IDMLOperator* op, DML_EXECUTION_FLAGS flags, REFIID riid, void** ppv) = 0;
    virtual HRESULT STDMETHODCALLTYPE CreateOperatorInitializer(UINT operatorCount, IDMLCompiledOperator* const* operators, REFIID riid, void** ppv) = 0;
    virtual HRESULT STDMETHODCALLTYPE CreateCommandRecorder(REFIID riid, void** ppv) = 0;
    virtual HRESULT STDMETHODCALLTYPE CreateBindingTable(const DML_BINDING_TABLE_DESC* desc, REFIID riid, void** ppv) = 0;
    virtual HRESULT STDMETHODCALLTYPE Evict(UINT count, IDMLPageable* const* ppObjects) = 0;
    virtual HRESULT STDMETHODCALLTYPE MakeResident(UINT count, IDMLPageable* const* ppObjects) = 0;
    virtual HRESULT STDMETHODCALLTYPE GetDeviceRemovedReason() = 0;
    virtual HRESULT STDMETHODCALLTYPE GetParentDevice(REFIID riid, void** ppv) = 0;
};
#if DML_TARGET_VERSION >= 0x2100
struct IDMLDevice1 : public IDMLDevice {
    virtual HRESULT STDMETHODCALLTYPE CompileGraph(const DML_GRAPH_DESC* desc, DML_EXECUTION_FLAGS flags, REFIID riid, void** ppv) = 0;
};
#endif

__CRT_UUID_DECL(IDMLObject, 0x00000001, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
__CRT_UUID_DECL(IDMLDeviceChild, 0x00000002, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
__CRT_UUID_DECL(IDMLPageable, 0x00000003, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
__CRT_UUID_DECL(IDMLOperator, 0x00000004, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
__CRT_UUID_DECL(IDMLDispatchable, 0x00000005, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
__CRT_UUID_DECL(IDMLCompiledOperator, 0x00000006, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
__CRT_UUID_DECL(IDMLOperatorInitializer, 0x00000007, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
__CRT_UUID_DECL(IDMLBindingTable, 0x00000008, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
__CRT_UUID_DECL(IDMLCommandRecorder, 0x00000009, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
__CRT_UUID_DECL(IDMLDevice, 0x0000000a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
#if DML_TARGET_VERSION >= 0x2100
__CRT_UUID_DECL(IDMLDevice1, 0x0000000b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
#endif
