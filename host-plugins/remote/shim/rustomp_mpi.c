/* librustomp-mpi.so: the one piece of rustomp compiled against an MPI's own header.
 *
 * MPI fixes its C API, not its ABI: handles are pointers in Open MPI and integers in MPICH,
 * constants are link-time symbols in one and macros in the other. So the Rust side never sees
 * an MPI type. It dlopens this library (only in a process an MPI launcher started) and calls
 * the `rmpi_*` functions below, a small C ABI of ints, sizes and opaque handle slots that
 * stays the same whatever MPI this file was compiled with (`mpicc -shared -fPIC`, done by
 * `cargo xtask host`). libomptarget.so.22.1 itself never links libmpi.
 *
 * Every call works on one communicator, a duplicate of MPI_COMM_WORLD made at init, whose
 * error handler is MPI_ERRORS_RETURN: an MPI error comes back as a code (rmpi_error_string
 * words it), never ends the process. Sources and tags below 0 mean "any".
 *
 * Bump RMPI_ABI whenever a signature or a meaning here changes (mpi.rs checks it).
 */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <string.h>

#define RMPI_ABI 1

static MPI_Comm comm = MPI_COMM_NULL;
static int initialized_here = 0;

int rmpi_abi(void) { return RMPI_ABI; }

/* The bytes of the handle slots the Rust side must provide. */
void rmpi_sizes(int *request_bytes, int *message_bytes) {
    *request_bytes = (int)sizeof(MPI_Request);
    *message_bytes = (int)sizeof(MPI_Message);
}

static void copy_error(int code, char *err, int errlen) {
    if (err == NULL || errlen <= 0)
        return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
        len = 0;
    if (len >= errlen)
        len = errlen - 1;
    memcpy(err, text, (size_t)len);
    err[len] = '\0';
}

/* Initializes MPI (unless the program did) asking for `required`, then makes the
 * communicator. `provided` gets the thread level as 0 single, 1 funneled, 2 serialized,
 * 3 multiple; `tag_ub` the largest tag. */
int rmpi_init(int required, int *provided, int *rank, int *size, int *tag_ub, char *err,
              int errlen) {
    static const int levels[4] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                                  MPI_THREAD_MULTIPLE};
    int flag = 0, level = MPI_THREAD_SINGLE, rc;
    if (required < 0 || required > 3)
        required = 3;
    MPI_Initialized(&flag);
    if (!flag) {
        rc = MPI_Init_thread(NULL, NULL, levels[required], &level);
        if (rc != MPI_SUCCESS) {
            copy_error(rc, err, errlen);
            return rc;
        }
        initialized_here = 1;
    } else {
        MPI_Query_thread(&level);
    }
    *provided = 0;
    for (int i = 0; i < 4; i++)
        if (level == levels[i])
            *provided = i;
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_rank(comm, rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(comm, size);
    if (rc == MPI_SUCCESS) {
        int *ub = NULL;
        int found = 0;
        rc = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
        *tag_ub = (rc == MPI_SUCCESS && found && ub != NULL) ? *ub : 32767;
    }
    if (rc != MPI_SUCCESS)
        copy_error(rc, err, errlen);
    return rc;
}

/* Frees the communicator and finalizes MPI if this library initialized it. */
int rmpi_finalize(void) {
    if (comm != MPI_COMM_NULL)
        MPI_Comm_free(&comm);
    if (initialized_here) {
        initialized_here = 0;
        return MPI_Finalize();
    }
    return MPI_SUCCESS;
}

int rmpi_abort(int code) { return MPI_Abort(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code); }

static int source_of(int source) { return source < 0 ? MPI_ANY_SOURCE : source; }
static int tag_of(int tag) { return tag < 0 ? MPI_ANY_TAG : tag; }

int rmpi_isend(const void *buf, int bytes, int dest, int tag, void *request) {
    return MPI_Isend(buf, bytes, MPI_BYTE, dest, tag, comm, (MPI_Request *)request);
}

int rmpi_irecv(void *buf, int bytes, int source, int tag, void *request) {
    return MPI_Irecv(buf, bytes, MPI_BYTE, source_of(source), tag_of(tag), comm,
                     (MPI_Request *)request);
}

/* Plain blocking calls, for the baseline the benchmark compares with. */
int rmpi_send(const void *buf, int bytes, int dest, int tag) {
    return MPI_Send(buf, bytes, MPI_BYTE, dest, tag, comm);
}

int rmpi_recv(void *buf, int bytes, int source, int tag) {
    return MPI_Recv(buf, bytes, MPI_BYTE, source_of(source), tag_of(tag), comm,
                    MPI_STATUS_IGNORE);
}

static void fill_status(const MPI_Status *status, int *source, int *tag, int *bytes) {
    int count = 0;
    if (MPI_Get_count(status, MPI_BYTE, &count) != MPI_SUCCESS || count == MPI_UNDEFINED)
        count = -1;
    *source = status->MPI_SOURCE;
    *tag = status->MPI_TAG;
    *bytes = count;
}

/* `done` 1 when the request completed (then source, tag and bytes describe it; the slot is
 * MPI_REQUEST_NULL again), 0 when not yet. A completed request's own error is returned. */
int rmpi_test(void *request, int *done, int *source, int *tag, int *bytes, int *cancelled) {
    MPI_Status status;
    memset(&status, 0, sizeof status);
    int rc = MPI_Test((MPI_Request *)request, done, &status);
    if (rc == MPI_ERR_IN_STATUS)
        rc = status.MPI_ERROR;
    if (rc == MPI_SUCCESS && *done) {
        fill_status(&status, source, tag, bytes);
        MPI_Test_cancelled(&status, cancelled);
    }
    return rc;
}

int rmpi_cancel(void *request) { return MPI_Cancel((MPI_Request *)request); }

int rmpi_request_free(void *request) { return MPI_Request_free((MPI_Request *)request); }

/* A matched probe: `found` 1 and the message's source, tag and size when one is waiting; the
 * message slot then goes to rmpi_mrecv. */
int rmpi_improbe(int source, int tag, int *found, void *message, int *out_source, int *out_tag,
                 int *bytes) {
    MPI_Status status;
    memset(&status, 0, sizeof status);
    int rc = MPI_Improbe(source_of(source), tag_of(tag), comm, found, (MPI_Message *)message,
                         &status);
    if (rc == MPI_SUCCESS && *found)
        fill_status(&status, out_source, out_tag, bytes);
    return rc;
}

int rmpi_mrecv(void *buf, int bytes, void *message) {
    return MPI_Mrecv(buf, bytes, MPI_BYTE, (MPI_Message *)message, MPI_STATUS_IGNORE);
}

void rmpi_error_string(int code, char *buf, int len) { copy_error(code, buf, len); }

/* 1 when the MPI library can send and receive CUDA device memory (Open MPI's extension,
 * asked at run time: the library in use may differ from the header's). */
int rmpi_gpu_aware(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}

/* The MPI library's own words for itself (MPI_Get_library_version). */
void rmpi_library_version(char *buf, int len) {
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    if (MPI_Get_library_version(text, &n) != MPI_SUCCESS)
        n = 0;
    if (buf == NULL || len <= 0)
        return;
    /* The first line is enough for a listing. */
    for (int i = 0; i < n; i++)
        if (text[i] == '\n' || text[i] == '\0') {
            n = i;
            break;
        }
    if (n >= len)
        n = len - 1;
    memcpy(buf, text, (size_t)n);
    buf[n] = '\0';
}
