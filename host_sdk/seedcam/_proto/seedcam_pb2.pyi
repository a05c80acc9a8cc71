from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StatusCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STATUS_OK: _ClassVar[StatusCode]
    STATUS_INVALID_ARGUMENT: _ClassVar[StatusCode]
    STATUS_NOT_FOUND: _ClassVar[StatusCode]
    STATUS_UNSUPPORTED: _ClassVar[StatusCode]
    STATUS_FAILED_PRECONDITION: _ClassVar[StatusCode]
    STATUS_BUSY: _ClassVar[StatusCode]
    STATUS_INTERNAL: _ClassVar[StatusCode]
    STATUS_UNAVAILABLE: _ClassVar[StatusCode]
    STATUS_UNAUTHENTICATED: _ClassVar[StatusCode]
STATUS_OK: StatusCode
STATUS_INVALID_ARGUMENT: StatusCode
STATUS_NOT_FOUND: StatusCode
STATUS_UNSUPPORTED: StatusCode
STATUS_FAILED_PRECONDITION: StatusCode
STATUS_BUSY: StatusCode
STATUS_INTERNAL: StatusCode
STATUS_UNAVAILABLE: StatusCode
STATUS_UNAUTHENTICATED: StatusCode

class ModelInfo(_message.Message):
    __slots__ = ("id", "name", "version", "task", "precision", "sha256", "active", "input_shape", "size_bytes", "labels")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    INPUT_SHAPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    version: str
    task: str
    precision: str
    sha256: str
    active: bool
    input_shape: _containers.RepeatedScalarFieldContainer[int]
    size_bytes: int
    labels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., version: _Optional[str] = ..., task: _Optional[str] = ..., precision: _Optional[str] = ..., sha256: _Optional[str] = ..., active: _Optional[bool] = ..., input_shape: _Optional[_Iterable[int]] = ..., size_bytes: _Optional[int] = ..., labels: _Optional[_Iterable[str]] = ...) -> None: ...

class DeviceInfo(_message.Message):
    __slots__ = ("protocol_version", "firmware_version", "boot_id", "serial_number", "max_frame_size", "models", "board", "tasks_enabled", "camera", "frame_width", "frame_height", "uptime_s", "result_dictionary")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    FIRMWARE_VERSION_FIELD_NUMBER: _ClassVar[int]
    BOOT_ID_FIELD_NUMBER: _ClassVar[int]
    SERIAL_NUMBER_FIELD_NUMBER: _ClassVar[int]
    MAX_FRAME_SIZE_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    BOARD_FIELD_NUMBER: _ClassVar[int]
    TASKS_ENABLED_FIELD_NUMBER: _ClassVar[int]
    CAMERA_FIELD_NUMBER: _ClassVar[int]
    FRAME_WIDTH_FIELD_NUMBER: _ClassVar[int]
    FRAME_HEIGHT_FIELD_NUMBER: _ClassVar[int]
    UPTIME_S_FIELD_NUMBER: _ClassVar[int]
    RESULT_DICTIONARY_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    firmware_version: str
    boot_id: str
    serial_number: str
    max_frame_size: int
    models: _containers.RepeatedCompositeFieldContainer[ModelInfo]
    board: str
    tasks_enabled: _containers.RepeatedScalarFieldContainer[str]
    camera: str
    frame_width: int
    frame_height: int
    uptime_s: float
    result_dictionary: ResultDictionary
    def __init__(self, protocol_version: _Optional[int] = ..., firmware_version: _Optional[str] = ..., boot_id: _Optional[str] = ..., serial_number: _Optional[str] = ..., max_frame_size: _Optional[int] = ..., models: _Optional[_Iterable[_Union[ModelInfo, _Mapping]]] = ..., board: _Optional[str] = ..., tasks_enabled: _Optional[_Iterable[str]] = ..., camera: _Optional[str] = ..., frame_width: _Optional[int] = ..., frame_height: _Optional[int] = ..., uptime_s: _Optional[float] = ..., result_dictionary: _Optional[_Union[ResultDictionary, _Mapping]] = ...) -> None: ...

class Box(_message.Message):
    __slots__ = ("x_min", "y_min", "x_max", "y_max")
    X_MIN_FIELD_NUMBER: _ClassVar[int]
    Y_MIN_FIELD_NUMBER: _ClassVar[int]
    X_MAX_FIELD_NUMBER: _ClassVar[int]
    Y_MAX_FIELD_NUMBER: _ClassVar[int]
    x_min: float
    y_min: float
    x_max: float
    y_max: float
    def __init__(self, x_min: _Optional[float] = ..., y_min: _Optional[float] = ..., x_max: _Optional[float] = ..., y_max: _Optional[float] = ...) -> None: ...

class Detection(_message.Message):
    __slots__ = ("class_id", "label", "score", "box")
    CLASS_ID_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    BOX_FIELD_NUMBER: _ClassVar[int]
    class_id: int
    label: str
    score: float
    box: Box
    def __init__(self, class_id: _Optional[int] = ..., label: _Optional[str] = ..., score: _Optional[float] = ..., box: _Optional[_Union[Box, _Mapping]] = ...) -> None: ...

class LaneState(_message.Message):
    __slots__ = ("status", "offset_m", "heading_rad", "curvature_per_m", "offset_confidence", "heading_confidence", "curvature_confidence", "lane_width_m", "reference_forward_m")
    class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATUS_UNSPECIFIED: _ClassVar[LaneState.Status]
        OK: _ClassVar[LaneState.Status]
        ONE_LINE: _ClassVar[LaneState.Status]
        LOST: _ClassVar[LaneState.Status]
    STATUS_UNSPECIFIED: LaneState.Status
    OK: LaneState.Status
    ONE_LINE: LaneState.Status
    LOST: LaneState.Status
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OFFSET_M_FIELD_NUMBER: _ClassVar[int]
    HEADING_RAD_FIELD_NUMBER: _ClassVar[int]
    CURVATURE_PER_M_FIELD_NUMBER: _ClassVar[int]
    OFFSET_CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    HEADING_CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    CURVATURE_CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    LANE_WIDTH_M_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FORWARD_M_FIELD_NUMBER: _ClassVar[int]
    status: LaneState.Status
    offset_m: float
    heading_rad: float
    curvature_per_m: float
    offset_confidence: float
    heading_confidence: float
    curvature_confidence: float
    lane_width_m: float
    reference_forward_m: float
    def __init__(self, status: _Optional[_Union[LaneState.Status, str]] = ..., offset_m: _Optional[float] = ..., heading_rad: _Optional[float] = ..., curvature_per_m: _Optional[float] = ..., offset_confidence: _Optional[float] = ..., heading_confidence: _Optional[float] = ..., curvature_confidence: _Optional[float] = ..., lane_width_m: _Optional[float] = ..., reference_forward_m: _Optional[float] = ...) -> None: ...

class TextLine(_message.Message):
    __slots__ = ("text", "confidence", "char_confidences", "box")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    CHAR_CONFIDENCES_FIELD_NUMBER: _ClassVar[int]
    BOX_FIELD_NUMBER: _ClassVar[int]
    text: str
    confidence: float
    char_confidences: _containers.RepeatedScalarFieldContainer[float]
    box: Box
    def __init__(self, text: _Optional[str] = ..., confidence: _Optional[float] = ..., char_confidences: _Optional[_Iterable[float]] = ..., box: _Optional[_Union[Box, _Mapping]] = ...) -> None: ...

class Classification(_message.Message):
    __slots__ = ("class_id", "label", "score")
    CLASS_ID_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    class_id: int
    label: str
    score: float
    def __init__(self, class_id: _Optional[int] = ..., label: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class StageTiming(_message.Message):
    __slots__ = ("stage", "duration_us")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    DURATION_US_FIELD_NUMBER: _ClassVar[int]
    stage: str
    duration_us: int
    def __init__(self, stage: _Optional[str] = ..., duration_us: _Optional[int] = ...) -> None: ...

class Result(_message.Message):
    __slots__ = ("frame_id", "capture_timestamp_us", "timings", "model_ids", "lane", "detections", "text_lines", "classifications", "frame_width", "frame_height", "send_timestamp_us")
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    CAPTURE_TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    MODEL_IDS_FIELD_NUMBER: _ClassVar[int]
    LANE_FIELD_NUMBER: _ClassVar[int]
    DETECTIONS_FIELD_NUMBER: _ClassVar[int]
    TEXT_LINES_FIELD_NUMBER: _ClassVar[int]
    CLASSIFICATIONS_FIELD_NUMBER: _ClassVar[int]
    FRAME_WIDTH_FIELD_NUMBER: _ClassVar[int]
    FRAME_HEIGHT_FIELD_NUMBER: _ClassVar[int]
    SEND_TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    frame_id: int
    capture_timestamp_us: int
    timings: _containers.RepeatedCompositeFieldContainer[StageTiming]
    model_ids: _containers.RepeatedScalarFieldContainer[str]
    lane: LaneState
    detections: _containers.RepeatedCompositeFieldContainer[Detection]
    text_lines: _containers.RepeatedCompositeFieldContainer[TextLine]
    classifications: _containers.RepeatedCompositeFieldContainer[Classification]
    frame_width: int
    frame_height: int
    send_timestamp_us: int
    def __init__(self, frame_id: _Optional[int] = ..., capture_timestamp_us: _Optional[int] = ..., timings: _Optional[_Iterable[_Union[StageTiming, _Mapping]]] = ..., model_ids: _Optional[_Iterable[str]] = ..., lane: _Optional[_Union[LaneState, _Mapping]] = ..., detections: _Optional[_Iterable[_Union[Detection, _Mapping]]] = ..., text_lines: _Optional[_Iterable[_Union[TextLine, _Mapping]]] = ..., classifications: _Optional[_Iterable[_Union[Classification, _Mapping]]] = ..., frame_width: _Optional[int] = ..., frame_height: _Optional[int] = ..., send_timestamp_us: _Optional[int] = ...) -> None: ...

class LabelEntry(_message.Message):
    __slots__ = ("class_id", "label")
    CLASS_ID_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    class_id: int
    label: str
    def __init__(self, class_id: _Optional[int] = ..., label: _Optional[str] = ...) -> None: ...

class ResultDictionary(_message.Message):
    __slots__ = ("generation", "model_ids", "detection_labels", "classification_labels", "stages", "timings", "frame_width", "frame_height", "reference_forward_m", "frame_id", "timestamp_us")
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    MODEL_IDS_FIELD_NUMBER: _ClassVar[int]
    DETECTION_LABELS_FIELD_NUMBER: _ClassVar[int]
    CLASSIFICATION_LABELS_FIELD_NUMBER: _ClassVar[int]
    STAGES_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    FRAME_WIDTH_FIELD_NUMBER: _ClassVar[int]
    FRAME_HEIGHT_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FORWARD_M_FIELD_NUMBER: _ClassVar[int]
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    generation: int
    model_ids: _containers.RepeatedScalarFieldContainer[str]
    detection_labels: _containers.RepeatedCompositeFieldContainer[LabelEntry]
    classification_labels: _containers.RepeatedCompositeFieldContainer[LabelEntry]
    stages: _containers.RepeatedScalarFieldContainer[str]
    timings: str
    frame_width: int
    frame_height: int
    reference_forward_m: float
    frame_id: int
    timestamp_us: int
    def __init__(self, generation: _Optional[int] = ..., model_ids: _Optional[_Iterable[str]] = ..., detection_labels: _Optional[_Iterable[_Union[LabelEntry, _Mapping]]] = ..., classification_labels: _Optional[_Iterable[_Union[LabelEntry, _Mapping]]] = ..., stages: _Optional[_Iterable[str]] = ..., timings: _Optional[str] = ..., frame_width: _Optional[int] = ..., frame_height: _Optional[int] = ..., reference_forward_m: _Optional[float] = ..., frame_id: _Optional[int] = ..., timestamp_us: _Optional[int] = ...) -> None: ...

class LinkCounters(_message.Message):
    __slots__ = ("frames_rx", "frames_tx", "bytes_rx", "bytes_tx", "crc_errors", "decode_errors", "resyncs", "seq_lost", "oversize", "bad_version", "bytes_dropped", "duplicates", "bad_flags")
    FRAMES_RX_FIELD_NUMBER: _ClassVar[int]
    FRAMES_TX_FIELD_NUMBER: _ClassVar[int]
    BYTES_RX_FIELD_NUMBER: _ClassVar[int]
    BYTES_TX_FIELD_NUMBER: _ClassVar[int]
    CRC_ERRORS_FIELD_NUMBER: _ClassVar[int]
    DECODE_ERRORS_FIELD_NUMBER: _ClassVar[int]
    RESYNCS_FIELD_NUMBER: _ClassVar[int]
    SEQ_LOST_FIELD_NUMBER: _ClassVar[int]
    OVERSIZE_FIELD_NUMBER: _ClassVar[int]
    BAD_VERSION_FIELD_NUMBER: _ClassVar[int]
    BYTES_DROPPED_FIELD_NUMBER: _ClassVar[int]
    DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    BAD_FLAGS_FIELD_NUMBER: _ClassVar[int]
    frames_rx: int
    frames_tx: int
    bytes_rx: int
    bytes_tx: int
    crc_errors: int
    decode_errors: int
    resyncs: int
    seq_lost: int
    oversize: int
    bad_version: int
    bytes_dropped: int
    duplicates: int
    bad_flags: int
    def __init__(self, frames_rx: _Optional[int] = ..., frames_tx: _Optional[int] = ..., bytes_rx: _Optional[int] = ..., bytes_tx: _Optional[int] = ..., crc_errors: _Optional[int] = ..., decode_errors: _Optional[int] = ..., resyncs: _Optional[int] = ..., seq_lost: _Optional[int] = ..., oversize: _Optional[int] = ..., bad_version: _Optional[int] = ..., bytes_dropped: _Optional[int] = ..., duplicates: _Optional[int] = ..., bad_flags: _Optional[int] = ...) -> None: ...

class Health(_message.Message):
    __slots__ = ("boot_id", "uptime_s", "fps", "frames_captured", "frames_processed", "frames_dropped", "link", "active_models", "timestamp_us", "undecodable_requests", "camera_errors", "invalid_outputs", "canary_rollbacks", "unauthenticated_requests", "config_fallback", "latest_frame_id", "results_dropped")
    class InvalidOutputsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    BOOT_ID_FIELD_NUMBER: _ClassVar[int]
    UPTIME_S_FIELD_NUMBER: _ClassVar[int]
    FPS_FIELD_NUMBER: _ClassVar[int]
    FRAMES_CAPTURED_FIELD_NUMBER: _ClassVar[int]
    FRAMES_PROCESSED_FIELD_NUMBER: _ClassVar[int]
    FRAMES_DROPPED_FIELD_NUMBER: _ClassVar[int]
    LINK_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_MODELS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    UNDECODABLE_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    CAMERA_ERRORS_FIELD_NUMBER: _ClassVar[int]
    INVALID_OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    CANARY_ROLLBACKS_FIELD_NUMBER: _ClassVar[int]
    UNAUTHENTICATED_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FALLBACK_FIELD_NUMBER: _ClassVar[int]
    LATEST_FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    RESULTS_DROPPED_FIELD_NUMBER: _ClassVar[int]
    boot_id: str
    uptime_s: float
    fps: float
    frames_captured: int
    frames_processed: int
    frames_dropped: int
    link: LinkCounters
    active_models: _containers.RepeatedScalarFieldContainer[str]
    timestamp_us: int
    undecodable_requests: int
    camera_errors: int
    invalid_outputs: _containers.ScalarMap[str, int]
    canary_rollbacks: int
    unauthenticated_requests: int
    config_fallback: str
    latest_frame_id: int
    results_dropped: int
    def __init__(self, boot_id: _Optional[str] = ..., uptime_s: _Optional[float] = ..., fps: _Optional[float] = ..., frames_captured: _Optional[int] = ..., frames_processed: _Optional[int] = ..., frames_dropped: _Optional[int] = ..., link: _Optional[_Union[LinkCounters, _Mapping]] = ..., active_models: _Optional[_Iterable[str]] = ..., timestamp_us: _Optional[int] = ..., undecodable_requests: _Optional[int] = ..., camera_errors: _Optional[int] = ..., invalid_outputs: _Optional[_Mapping[str, int]] = ..., canary_rollbacks: _Optional[int] = ..., unauthenticated_requests: _Optional[int] = ..., config_fallback: _Optional[str] = ..., latest_frame_id: _Optional[int] = ..., results_dropped: _Optional[int] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("device",)
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    device: DeviceInfo
    def __init__(self, device: _Optional[_Union[DeviceInfo, _Mapping]] = ...) -> None: ...

class StatusEvent(_message.Message):
    __slots__ = ("hello", "health", "dictionary", "preview")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    DICTIONARY_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    health: Health
    dictionary: ResultDictionary
    preview: PreviewChunk
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., health: _Optional[_Union[Health, _Mapping]] = ..., dictionary: _Optional[_Union[ResultDictionary, _Mapping]] = ..., preview: _Optional[_Union[PreviewChunk, _Mapping]] = ...) -> None: ...

class LogRecord(_message.Message):
    __slots__ = ("level", "logger", "message", "timestamp_us")
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    LOGGER_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    level: int
    logger: str
    message: str
    timestamp_us: int
    def __init__(self, level: _Optional[int] = ..., logger: _Optional[str] = ..., message: _Optional[str] = ..., timestamp_us: _Optional[int] = ...) -> None: ...

class InfoRequest(_message.Message):
    __slots__ = ("host_protocol_version",)
    HOST_PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    host_protocol_version: int
    def __init__(self, host_protocol_version: _Optional[int] = ...) -> None: ...

class ConfigGetRequest(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: str
    def __init__(self, key: _Optional[str] = ...) -> None: ...

class ConfigSetRequest(_message.Message):
    __slots__ = ("key", "value_json")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    key: str
    value_json: str
    def __init__(self, key: _Optional[str] = ..., value_json: _Optional[str] = ...) -> None: ...

class ConfigResetRequest(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: str
    def __init__(self, key: _Optional[str] = ...) -> None: ...

class ConfigValue(_message.Message):
    __slots__ = ("key", "value_json", "restart_required", "persisted")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    RESTART_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    PERSISTED_FIELD_NUMBER: _ClassVar[int]
    key: str
    value_json: str
    restart_required: bool
    persisted: bool
    def __init__(self, key: _Optional[str] = ..., value_json: _Optional[str] = ..., restart_required: _Optional[bool] = ..., persisted: _Optional[bool] = ...) -> None: ...

class ListModelsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ModelList(_message.Message):
    __slots__ = ("models",)
    MODELS_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[ModelInfo]
    def __init__(self, models: _Optional[_Iterable[_Union[ModelInfo, _Mapping]]] = ...) -> None: ...

class SelectTasksRequest(_message.Message):
    __slots__ = ("tasks",)
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tasks: _Optional[_Iterable[str]] = ...) -> None: ...

class TaskList(_message.Message):
    __slots__ = ("enabled", "available")
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    enabled: _containers.RepeatedScalarFieldContainer[str]
    available: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, enabled: _Optional[_Iterable[str]] = ..., available: _Optional[_Iterable[str]] = ...) -> None: ...

class SnapshotRequest(_message.Message):
    __slots__ = ("quality", "frame_id", "offset", "max_bytes")
    QUALITY_FIELD_NUMBER: _ClassVar[int]
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    quality: int
    frame_id: int
    offset: int
    max_bytes: int
    def __init__(self, quality: _Optional[int] = ..., frame_id: _Optional[int] = ..., offset: _Optional[int] = ..., max_bytes: _Optional[int] = ...) -> None: ...

class Snapshot(_message.Message):
    __slots__ = ("jpeg", "frame_id", "capture_timestamp_us", "width", "height", "offset", "total_size")
    JPEG_FIELD_NUMBER: _ClassVar[int]
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    CAPTURE_TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    jpeg: bytes
    frame_id: int
    capture_timestamp_us: int
    width: int
    height: int
    offset: int
    total_size: int
    def __init__(self, jpeg: _Optional[bytes] = ..., frame_id: _Optional[int] = ..., capture_timestamp_us: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., offset: _Optional[int] = ..., total_size: _Optional[int] = ...) -> None: ...

class PingRequest(_message.Message):
    __slots__ = ("payload",)
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    payload: bytes
    def __init__(self, payload: _Optional[bytes] = ...) -> None: ...

class Pong(_message.Message):
    __slots__ = ("payload",)
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    payload: bytes
    def __init__(self, payload: _Optional[bytes] = ...) -> None: ...

class RebootRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Request(_message.Message):
    __slots__ = ("info", "config_get", "config_set", "config_reset", "list_models", "select_tasks", "snapshot", "ping", "reboot", "preview", "blackbox_list", "blackbox_pull", "blackbox_trigger")
    INFO_FIELD_NUMBER: _ClassVar[int]
    CONFIG_GET_FIELD_NUMBER: _ClassVar[int]
    CONFIG_SET_FIELD_NUMBER: _ClassVar[int]
    CONFIG_RESET_FIELD_NUMBER: _ClassVar[int]
    LIST_MODELS_FIELD_NUMBER: _ClassVar[int]
    SELECT_TASKS_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    PING_FIELD_NUMBER: _ClassVar[int]
    REBOOT_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    BLACKBOX_LIST_FIELD_NUMBER: _ClassVar[int]
    BLACKBOX_PULL_FIELD_NUMBER: _ClassVar[int]
    BLACKBOX_TRIGGER_FIELD_NUMBER: _ClassVar[int]
    info: InfoRequest
    config_get: ConfigGetRequest
    config_set: ConfigSetRequest
    config_reset: ConfigResetRequest
    list_models: ListModelsRequest
    select_tasks: SelectTasksRequest
    snapshot: SnapshotRequest
    ping: PingRequest
    reboot: RebootRequest
    preview: PreviewRequest
    blackbox_list: BlackBoxListRequest
    blackbox_pull: BlackBoxPullRequest
    blackbox_trigger: BlackBoxTriggerRequest
    def __init__(self, info: _Optional[_Union[InfoRequest, _Mapping]] = ..., config_get: _Optional[_Union[ConfigGetRequest, _Mapping]] = ..., config_set: _Optional[_Union[ConfigSetRequest, _Mapping]] = ..., config_reset: _Optional[_Union[ConfigResetRequest, _Mapping]] = ..., list_models: _Optional[_Union[ListModelsRequest, _Mapping]] = ..., select_tasks: _Optional[_Union[SelectTasksRequest, _Mapping]] = ..., snapshot: _Optional[_Union[SnapshotRequest, _Mapping]] = ..., ping: _Optional[_Union[PingRequest, _Mapping]] = ..., reboot: _Optional[_Union[RebootRequest, _Mapping]] = ..., preview: _Optional[_Union[PreviewRequest, _Mapping]] = ..., blackbox_list: _Optional[_Union[BlackBoxListRequest, _Mapping]] = ..., blackbox_pull: _Optional[_Union[BlackBoxPullRequest, _Mapping]] = ..., blackbox_trigger: _Optional[_Union[BlackBoxTriggerRequest, _Mapping]] = ...) -> None: ...

class Response(_message.Message):
    __slots__ = ("status", "message", "info", "config", "models", "tasks", "snapshot", "pong", "preview", "blackbox_list", "blackbox_piece", "blackbox_file")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    PONG_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    BLACKBOX_LIST_FIELD_NUMBER: _ClassVar[int]
    BLACKBOX_PIECE_FIELD_NUMBER: _ClassVar[int]
    BLACKBOX_FILE_FIELD_NUMBER: _ClassVar[int]
    status: StatusCode
    message: str
    info: DeviceInfo
    config: ConfigValue
    models: ModelList
    tasks: TaskList
    snapshot: Snapshot
    pong: Pong
    preview: PreviewSettings
    blackbox_list: BlackBoxList
    blackbox_piece: BlackBoxPiece
    blackbox_file: BlackBoxFileInfo
    def __init__(self, status: _Optional[_Union[StatusCode, str]] = ..., message: _Optional[str] = ..., info: _Optional[_Union[DeviceInfo, _Mapping]] = ..., config: _Optional[_Union[ConfigValue, _Mapping]] = ..., models: _Optional[_Union[ModelList, _Mapping]] = ..., tasks: _Optional[_Union[TaskList, _Mapping]] = ..., snapshot: _Optional[_Union[Snapshot, _Mapping]] = ..., pong: _Optional[_Union[Pong, _Mapping]] = ..., preview: _Optional[_Union[PreviewSettings, _Mapping]] = ..., blackbox_list: _Optional[_Union[BlackBoxList, _Mapping]] = ..., blackbox_piece: _Optional[_Union[BlackBoxPiece, _Mapping]] = ..., blackbox_file: _Optional[_Union[BlackBoxFileInfo, _Mapping]] = ...) -> None: ...

class TransferBegin(_message.Message):
    __slots__ = ("header", "signature")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    header: bytes
    signature: bytes
    def __init__(self, header: _Optional[bytes] = ..., signature: _Optional[bytes] = ...) -> None: ...

class TransferChunk(_message.Message):
    __slots__ = ("transfer_tag", "offset", "data")
    TRANSFER_TAG_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    transfer_tag: int
    offset: int
    data: bytes
    def __init__(self, transfer_tag: _Optional[int] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class TransferEnd(_message.Message):
    __slots__ = ("transfer_tag", "sha256", "activate")
    TRANSFER_TAG_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    ACTIVATE_FIELD_NUMBER: _ClassVar[int]
    transfer_tag: int
    sha256: str
    activate: bool
    def __init__(self, transfer_tag: _Optional[int] = ..., sha256: _Optional[str] = ..., activate: _Optional[bool] = ...) -> None: ...

class TransferAbort(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSlotsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SlotRequest(_message.Message):
    __slots__ = ("name", "slot")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    name: str
    slot: str
    def __init__(self, name: _Optional[str] = ..., slot: _Optional[str] = ...) -> None: ...

class UpdateRequest(_message.Message):
    __slots__ = ("begin", "chunk", "end", "abort", "list_slots", "activate", "rollback", "delete")
    BEGIN_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    ABORT_FIELD_NUMBER: _ClassVar[int]
    LIST_SLOTS_FIELD_NUMBER: _ClassVar[int]
    ACTIVATE_FIELD_NUMBER: _ClassVar[int]
    ROLLBACK_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    begin: TransferBegin
    chunk: TransferChunk
    end: TransferEnd
    abort: TransferAbort
    list_slots: ListSlotsRequest
    activate: SlotRequest
    rollback: SlotRequest
    delete: SlotRequest
    def __init__(self, begin: _Optional[_Union[TransferBegin, _Mapping]] = ..., chunk: _Optional[_Union[TransferChunk, _Mapping]] = ..., end: _Optional[_Union[TransferEnd, _Mapping]] = ..., abort: _Optional[_Union[TransferAbort, _Mapping]] = ..., list_slots: _Optional[_Union[ListSlotsRequest, _Mapping]] = ..., activate: _Optional[_Union[SlotRequest, _Mapping]] = ..., rollback: _Optional[_Union[SlotRequest, _Mapping]] = ..., delete: _Optional[_Union[SlotRequest, _Mapping]] = ...) -> None: ...

class TransferState(_message.Message):
    __slots__ = ("transfer_tag", "next_offset", "size", "resumed", "max_chunk")
    TRANSFER_TAG_FIELD_NUMBER: _ClassVar[int]
    NEXT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    RESUMED_FIELD_NUMBER: _ClassVar[int]
    MAX_CHUNK_FIELD_NUMBER: _ClassVar[int]
    transfer_tag: int
    next_offset: int
    size: int
    resumed: bool
    max_chunk: int
    def __init__(self, transfer_tag: _Optional[int] = ..., next_offset: _Optional[int] = ..., size: _Optional[int] = ..., resumed: _Optional[bool] = ..., max_chunk: _Optional[int] = ...) -> None: ...

class SlotInfo(_message.Message):
    __slots__ = ("slot", "bundle_id", "version", "sha256", "security_counter", "active", "previous", "state")
    SLOT_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    SECURITY_COUNTER_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    slot: str
    bundle_id: str
    version: str
    sha256: str
    security_counter: int
    active: bool
    previous: bool
    state: str
    def __init__(self, slot: _Optional[str] = ..., bundle_id: _Optional[str] = ..., version: _Optional[str] = ..., sha256: _Optional[str] = ..., security_counter: _Optional[int] = ..., active: _Optional[bool] = ..., previous: _Optional[bool] = ..., state: _Optional[str] = ...) -> None: ...

class SlotGroup(_message.Message):
    __slots__ = ("name", "slots", "security_counter", "running")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    SECURITY_COUNTER_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    name: str
    slots: _containers.RepeatedCompositeFieldContainer[SlotInfo]
    security_counter: int
    running: str
    def __init__(self, name: _Optional[str] = ..., slots: _Optional[_Iterable[_Union[SlotInfo, _Mapping]]] = ..., security_counter: _Optional[int] = ..., running: _Optional[str] = ...) -> None: ...

class SlotList(_message.Message):
    __slots__ = ("groups",)
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[SlotGroup]
    def __init__(self, groups: _Optional[_Iterable[_Union[SlotGroup, _Mapping]]] = ...) -> None: ...

class InstallReport(_message.Message):
    __slots__ = ("name", "slot", "bundle_id", "activated", "selftest_max_error", "previous_slot", "restart_pending")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVATED_FIELD_NUMBER: _ClassVar[int]
    SELFTEST_MAX_ERROR_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_SLOT_FIELD_NUMBER: _ClassVar[int]
    RESTART_PENDING_FIELD_NUMBER: _ClassVar[int]
    name: str
    slot: str
    bundle_id: str
    activated: bool
    selftest_max_error: float
    previous_slot: str
    restart_pending: bool
    def __init__(self, name: _Optional[str] = ..., slot: _Optional[str] = ..., bundle_id: _Optional[str] = ..., activated: _Optional[bool] = ..., selftest_max_error: _Optional[float] = ..., previous_slot: _Optional[str] = ..., restart_pending: _Optional[bool] = ...) -> None: ...

class UpdateResponse(_message.Message):
    __slots__ = ("status", "message", "reason", "state", "installed", "slots")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    INSTALLED_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    status: StatusCode
    message: str
    reason: str
    state: TransferState
    installed: InstallReport
    slots: SlotList
    def __init__(self, status: _Optional[_Union[StatusCode, str]] = ..., message: _Optional[str] = ..., reason: _Optional[str] = ..., state: _Optional[_Union[TransferState, _Mapping]] = ..., installed: _Optional[_Union[InstallReport, _Mapping]] = ..., slots: _Optional[_Union[SlotList, _Mapping]] = ...) -> None: ...

class PreviewRequest(_message.Message):
    __slots__ = ("fps", "quality", "max_width", "lease_s")
    FPS_FIELD_NUMBER: _ClassVar[int]
    QUALITY_FIELD_NUMBER: _ClassVar[int]
    MAX_WIDTH_FIELD_NUMBER: _ClassVar[int]
    LEASE_S_FIELD_NUMBER: _ClassVar[int]
    fps: float
    quality: int
    max_width: int
    lease_s: float
    def __init__(self, fps: _Optional[float] = ..., quality: _Optional[int] = ..., max_width: _Optional[int] = ..., lease_s: _Optional[float] = ...) -> None: ...

class PreviewSettings(_message.Message):
    __slots__ = ("fps", "quality", "max_width", "line_limited", "message", "lease_s", "width", "height")
    FPS_FIELD_NUMBER: _ClassVar[int]
    QUALITY_FIELD_NUMBER: _ClassVar[int]
    MAX_WIDTH_FIELD_NUMBER: _ClassVar[int]
    LINE_LIMITED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LEASE_S_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    fps: float
    quality: int
    max_width: int
    line_limited: bool
    message: str
    lease_s: float
    width: int
    height: int
    def __init__(self, fps: _Optional[float] = ..., quality: _Optional[int] = ..., max_width: _Optional[int] = ..., line_limited: _Optional[bool] = ..., message: _Optional[str] = ..., lease_s: _Optional[float] = ..., width: _Optional[int] = ..., height: _Optional[int] = ...) -> None: ...

class PreviewChunk(_message.Message):
    __slots__ = ("frame_id", "capture_timestamp_us", "width", "height", "offset", "total_size", "data")
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    CAPTURE_TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    frame_id: int
    capture_timestamp_us: int
    width: int
    height: int
    offset: int
    total_size: int
    data: bytes
    def __init__(self, frame_id: _Optional[int] = ..., capture_timestamp_us: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., offset: _Optional[int] = ..., total_size: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class BlackBoxListRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BlackBoxPullRequest(_message.Message):
    __slots__ = ("name", "offset", "max_bytes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    offset: int
    max_bytes: int
    def __init__(self, name: _Optional[str] = ..., offset: _Optional[int] = ..., max_bytes: _Optional[int] = ...) -> None: ...

class BlackBoxTriggerRequest(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class BlackBoxFileInfo(_message.Message):
    __slots__ = ("name", "trigger", "reason", "trigger_timestamp_us", "first_timestamp_us", "size", "results", "entries", "boot_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    FIRST_TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    BOOT_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    trigger: str
    reason: str
    trigger_timestamp_us: int
    first_timestamp_us: int
    size: int
    results: int
    entries: int
    boot_id: str
    def __init__(self, name: _Optional[str] = ..., trigger: _Optional[str] = ..., reason: _Optional[str] = ..., trigger_timestamp_us: _Optional[int] = ..., first_timestamp_us: _Optional[int] = ..., size: _Optional[int] = ..., results: _Optional[int] = ..., entries: _Optional[int] = ..., boot_id: _Optional[str] = ...) -> None: ...

class BlackBoxList(_message.Message):
    __slots__ = ("files", "seconds")
    FILES_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[BlackBoxFileInfo]
    seconds: float
    def __init__(self, files: _Optional[_Iterable[_Union[BlackBoxFileInfo, _Mapping]]] = ..., seconds: _Optional[float] = ...) -> None: ...

class BlackBoxPiece(_message.Message):
    __slots__ = ("name", "offset", "total_size", "data")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    name: str
    offset: int
    total_size: int
    data: bytes
    def __init__(self, name: _Optional[str] = ..., offset: _Optional[int] = ..., total_size: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class BlackBoxEntry(_message.Message):
    __slots__ = ("timestamp_us", "result", "health", "log", "thumbnail")
    TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    THUMBNAIL_FIELD_NUMBER: _ClassVar[int]
    timestamp_us: int
    result: Result
    health: Health
    log: LogRecord
    thumbnail: PreviewChunk
    def __init__(self, timestamp_us: _Optional[int] = ..., result: _Optional[_Union[Result, _Mapping]] = ..., health: _Optional[_Union[Health, _Mapping]] = ..., log: _Optional[_Union[LogRecord, _Mapping]] = ..., thumbnail: _Optional[_Union[PreviewChunk, _Mapping]] = ...) -> None: ...

class BlackBoxFile(_message.Message):
    __slots__ = ("info", "device", "entries")
    INFO_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    info: BlackBoxFileInfo
    device: DeviceInfo
    entries: _containers.RepeatedCompositeFieldContainer[BlackBoxEntry]
    def __init__(self, info: _Optional[_Union[BlackBoxFileInfo, _Mapping]] = ..., device: _Optional[_Union[DeviceInfo, _Mapping]] = ..., entries: _Optional[_Iterable[_Union[BlackBoxEntry, _Mapping]]] = ...) -> None: ...
