from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class YtMsg(_message.Message):
    __slots__ = ("rpc", "response", "result")
    RPC_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    rpc: YtRpc
    response: YtRpcResponse
    result: YtResult
    def __init__(self, rpc: _Optional[_Union[YtRpc, _Mapping]] = ..., response: _Optional[_Union[YtRpcResponse, _Mapping]] = ..., result: _Optional[_Union[YtResult, _Mapping]] = ...) -> None: ...

class YtResult(_message.Message):
    __slots__ = ("frameId", "frameTimestampUs", "systemStatusResult", "msgOutput", "dataV2")
    FRAMEID_FIELD_NUMBER: _ClassVar[int]
    FRAMETIMESTAMPUS_FIELD_NUMBER: _ClassVar[int]
    SYSTEMSTATUSRESULT_FIELD_NUMBER: _ClassVar[int]
    MSGOUTPUT_FIELD_NUMBER: _ClassVar[int]
    DATAV2_FIELD_NUMBER: _ClassVar[int]
    frameId: int
    frameTimestampUs: int
    systemStatusResult: SystemStatusResult
    msgOutput: str
    dataV2: bytes
    def __init__(self, frameId: _Optional[int] = ..., frameTimestampUs: _Optional[int] = ..., systemStatusResult: _Optional[_Union[SystemStatusResult, _Mapping]] = ..., msgOutput: _Optional[str] = ..., dataV2: _Optional[bytes] = ...) -> None: ...

class SystemStatusResult(_message.Message):
    __slots__ = ("heartBeatId", "temperatures", "powers", "freeHeap")
    HEARTBEATID_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURES_FIELD_NUMBER: _ClassVar[int]
    POWERS_FIELD_NUMBER: _ClassVar[int]
    FREEHEAP_FIELD_NUMBER: _ClassVar[int]
    heartBeatId: int
    temperatures: _containers.RepeatedScalarFieldContainer[float]
    powers: _containers.RepeatedScalarFieldContainer[float]
    freeHeap: int
    def __init__(self, heartBeatId: _Optional[int] = ..., temperatures: _Optional[_Iterable[float]] = ..., powers: _Optional[_Iterable[float]] = ..., freeHeap: _Optional[int] = ...) -> None: ...

class YtRpc(_message.Message):
    __slots__ = ("func", "sequenceId", "auth", "strParams", "intParams", "cameraExposureParams", "flasherParams", "filePart")
    class Function(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        setModel: _ClassVar[YtRpc.Function]
        getDeviceInfo: _ClassVar[YtRpc.Function]
        upgradeFirmware: _ClassVar[YtRpc.Function]
        reboot: _ClassVar[YtRpc.Function]
        getLastError: _ClassVar[YtRpc.Function]
        setExposure: _ClassVar[YtRpc.Function]
        setFlasher: _ClassVar[YtRpc.Function]
        setMainCamera: _ClassVar[YtRpc.Function]
        setCameraRotation: _ClassVar[YtRpc.Function]
        listFile: _ClassVar[YtRpc.Function]
        uploadFile: _ClassVar[YtRpc.Function]
        deleteFile: _ClassVar[YtRpc.Function]
        formatPartition: _ClassVar[YtRpc.Function]
        getConfig: _ClassVar[YtRpc.Function]
        setConfig: _ClassVar[YtRpc.Function]
        resetConfig: _ClassVar[YtRpc.Function]
        downloadFile: _ClassVar[YtRpc.Function]
        takeRawPicture: _ClassVar[YtRpc.Function]
        setDebugDrawing: _ClassVar[YtRpc.Function]
        getFaceLibInfo: _ClassVar[YtRpc.Function]
        clearFaceLib: _ClassVar[YtRpc.Function]
        registerFaceIdWithPic: _ClassVar[YtRpc.Function]
        registerFaceIdFromCamera: _ClassVar[YtRpc.Function]
        deleteFaceId: _ClassVar[YtRpc.Function]
        setFaceId: _ClassVar[YtRpc.Function]
        getFacePic: _ClassVar[YtRpc.Function]
        listFaceId: _ClassVar[YtRpc.Function]
        deleteFaceName: _ClassVar[YtRpc.Function]
        getTracePic: _ClassVar[YtRpc.Function]
        registerFaceIdWithTraceId: _ClassVar[YtRpc.Function]
    setModel: YtRpc.Function
    getDeviceInfo: YtRpc.Function
    upgradeFirmware: YtRpc.Function
    reboot: YtRpc.Function
    getLastError: YtRpc.Function
    setExposure: YtRpc.Function
    setFlasher: YtRpc.Function
    setMainCamera: YtRpc.Function
    setCameraRotation: YtRpc.Function
    listFile: YtRpc.Function
    uploadFile: YtRpc.Function
    deleteFile: YtRpc.Function
    formatPartition: YtRpc.Function
    getConfig: YtRpc.Function
    setConfig: YtRpc.Function
    resetConfig: YtRpc.Function
    downloadFile: YtRpc.Function
    takeRawPicture: YtRpc.Function
    setDebugDrawing: YtRpc.Function
    getFaceLibInfo: YtRpc.Function
    clearFaceLib: YtRpc.Function
    registerFaceIdWithPic: YtRpc.Function
    registerFaceIdFromCamera: YtRpc.Function
    deleteFaceId: YtRpc.Function
    setFaceId: YtRpc.Function
    getFacePic: YtRpc.Function
    listFaceId: YtRpc.Function
    deleteFaceName: YtRpc.Function
    getTracePic: YtRpc.Function
    registerFaceIdWithTraceId: YtRpc.Function
    FUNC_FIELD_NUMBER: _ClassVar[int]
    SEQUENCEID_FIELD_NUMBER: _ClassVar[int]
    AUTH_FIELD_NUMBER: _ClassVar[int]
    STRPARAMS_FIELD_NUMBER: _ClassVar[int]
    INTPARAMS_FIELD_NUMBER: _ClassVar[int]
    CAMERAEXPOSUREPARAMS_FIELD_NUMBER: _ClassVar[int]
    FLASHERPARAMS_FIELD_NUMBER: _ClassVar[int]
    FILEPART_FIELD_NUMBER: _ClassVar[int]
    func: YtRpc.Function
    sequenceId: int
    auth: str
    strParams: str
    intParams: int
    cameraExposureParams: CameraExposureParams
    flasherParams: FlasherParams
    filePart: FilePart
    def __init__(self, func: _Optional[_Union[YtRpc.Function, str]] = ..., sequenceId: _Optional[int] = ..., auth: _Optional[str] = ..., strParams: _Optional[str] = ..., intParams: _Optional[int] = ..., cameraExposureParams: _Optional[_Union[CameraExposureParams, _Mapping]] = ..., flasherParams: _Optional[_Union[FlasherParams, _Mapping]] = ..., filePart: _Optional[_Union[FilePart, _Mapping]] = ...) -> None: ...

class YtRpcResponse(_message.Message):
    __slots__ = ("sequenceId", "code", "strData", "intData", "fileListResult", "filePart")
    class ReturnCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SUCC: _ClassVar[YtRpcResponse.ReturnCode]
        CONTINUE: _ClassVar[YtRpcResponse.ReturnCode]
        ERROR_OTHER: _ClassVar[YtRpcResponse.ReturnCode]
        ERROR_CRC: _ClassVar[YtRpcResponse.ReturnCode]
        ERROR_PARAMETERS: _ClassVar[YtRpcResponse.ReturnCode]
        ERROR_RPC_TIMEOUT: _ClassVar[YtRpcResponse.ReturnCode]
        ERROR_NOT_EXIST: _ClassVar[YtRpcResponse.ReturnCode]
        ERROR_INVALID_PATH: _ClassVar[YtRpcResponse.ReturnCode]
        ERROR_FILE_EXCEED_LIMITS: _ClassVar[YtRpcResponse.ReturnCode]
        ERROR_PERMISSION: _ClassVar[YtRpcResponse.ReturnCode]
    SUCC: YtRpcResponse.ReturnCode
    CONTINUE: YtRpcResponse.ReturnCode
    ERROR_OTHER: YtRpcResponse.ReturnCode
    ERROR_CRC: YtRpcResponse.ReturnCode
    ERROR_PARAMETERS: YtRpcResponse.ReturnCode
    ERROR_RPC_TIMEOUT: YtRpcResponse.ReturnCode
    ERROR_NOT_EXIST: YtRpcResponse.ReturnCode
    ERROR_INVALID_PATH: YtRpcResponse.ReturnCode
    ERROR_FILE_EXCEED_LIMITS: YtRpcResponse.ReturnCode
    ERROR_PERMISSION: YtRpcResponse.ReturnCode
    SEQUENCEID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    STRDATA_FIELD_NUMBER: _ClassVar[int]
    INTDATA_FIELD_NUMBER: _ClassVar[int]
    FILELISTRESULT_FIELD_NUMBER: _ClassVar[int]
    FILEPART_FIELD_NUMBER: _ClassVar[int]
    sequenceId: int
    code: YtRpcResponse.ReturnCode
    strData: str
    intData: int
    fileListResult: FileListResult
    filePart: FilePart
    def __init__(self, sequenceId: _Optional[int] = ..., code: _Optional[_Union[YtRpcResponse.ReturnCode, str]] = ..., strData: _Optional[str] = ..., intData: _Optional[int] = ..., fileListResult: _Optional[_Union[FileListResult, _Mapping]] = ..., filePart: _Optional[_Union[FilePart, _Mapping]] = ...) -> None: ...

class FilePart(_message.Message):
    __slots__ = ("path", "totalLength", "offset", "data")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TOTALLENGTH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    path: str
    totalLength: int
    offset: int
    data: bytes
    def __init__(self, path: _Optional[str] = ..., totalLength: _Optional[int] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class FileInfo(_message.Message):
    __slots__ = ("name", "isFolder", "size")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ISFOLDER_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    name: str
    isFolder: bool
    size: int
    def __init__(self, name: _Optional[str] = ..., isFolder: _Optional[bool] = ..., size: _Optional[int] = ...) -> None: ...

class FileListResult(_message.Message):
    __slots__ = ("folder", "total", "files")
    FOLDER_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    folder: str
    total: int
    files: _containers.RepeatedCompositeFieldContainer[FileInfo]
    def __init__(self, folder: _Optional[str] = ..., total: _Optional[int] = ..., files: _Optional[_Iterable[_Union[FileInfo, _Mapping]]] = ...) -> None: ...

class CameraExposureParams(_message.Message):
    __slots__ = ("camId", "type", "timeUs", "gain")
    class ExposureType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        MANUAL: _ClassVar[CameraExposureParams.ExposureType]
        AUTO: _ClassVar[CameraExposureParams.ExposureType]
    MANUAL: CameraExposureParams.ExposureType
    AUTO: CameraExposureParams.ExposureType
    CAMID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TIMEUS_FIELD_NUMBER: _ClassVar[int]
    GAIN_FIELD_NUMBER: _ClassVar[int]
    camId: int
    type: CameraExposureParams.ExposureType
    timeUs: int
    gain: int
    def __init__(self, camId: _Optional[int] = ..., type: _Optional[_Union[CameraExposureParams.ExposureType, str]] = ..., timeUs: _Optional[int] = ..., gain: _Optional[int] = ...) -> None: ...

class FlasherParams(_message.Message):
    __slots__ = ("ir", "white")
    IR_FIELD_NUMBER: _ClassVar[int]
    WHITE_FIELD_NUMBER: _ClassVar[int]
    ir: int
    white: int
    def __init__(self, ir: _Optional[int] = ..., white: _Optional[int] = ...) -> None: ...
