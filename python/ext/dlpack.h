/* The DLPack C ABI (0.8 and 1.0), declared from the specification (dmlc/dlpack include/dlpack/dlpack.h):
 * only what the package reads and writes. */
#ifndef IMGPIPE_PY_DLPACK_H
#define IMGPIPE_PY_DLPACK_H
#include <stdint.h>

enum { DL_CPU = 1, DL_CUDA = 2, DL_CUDA_HOST = 3, DL_CUDA_MANAGED = 13 };   /* DLDeviceType */
enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2 };                             /* DLDataTypeCode */

typedef struct {
    int32_t device_type;
    int32_t device_id;
} DLDevice;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;       /* in elements; NULL: compact, row-major */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* DLPack 1.0: the capsule "dltensor_versioned" */
typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif
