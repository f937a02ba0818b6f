/*
 * The colliders of a System (planes, spheres, boxes, cylinders): added, changed, read,
 * removed and listed by id.
 */
#define NO_IMPORT_ARRAY
#include "binding.h"

#include <limits.h>
#include <string.h>

int mspy_parse_collider(PyObject* args, Py_ssize_t offset, ms_collider* c) {
    if (PyTuple_GET_SIZE(args) != offset + 8) {
        PyErr_SetString(PyExc_TypeError,
                        "expected (kind, center, axis, size, velocity, restitution, friction, thickness)");
        return -1;
    }
    PyObject* kind = PyTuple_GET_ITEM(args, offset);
    const char* name = mspy_parse_name(kind, "collider kind");
    if (name == NULL) return -1;
    int type = -1;
    for (int t = 0; t < MS_COLLIDER_TYPE_COUNT; ++t)
        if (strcmp(name, ms_collider_type_name(t)) == 0) type = t;
    if (type < 0) {
        PyErr_Format(PyExc_ValueError, "collider kind %R is unknown; choose plane, sphere, box or cylinder", kind);
        return -1;
    }
    c->type = (ms_collider_type)type;
    if (mspy_parse_vector3(PyTuple_GET_ITEM(args, offset + 1), "center", c->center) < 0 ||
        mspy_parse_vector3(PyTuple_GET_ITEM(args, offset + 2), "axis", c->axis) < 0 ||
        mspy_parse_vector3(PyTuple_GET_ITEM(args, offset + 3), "size", c->size) < 0 ||
        mspy_parse_vector3(PyTuple_GET_ITEM(args, offset + 4), "velocity", c->velocity) < 0 ||
        mspy_parse_real(PyTuple_GET_ITEM(args, offset + 5), "restitution", &c->restitution) < 0 ||
        mspy_parse_real(PyTuple_GET_ITEM(args, offset + 6), "friction", &c->friction) < 0 ||
        mspy_parse_real(PyTuple_GET_ITEM(args, offset + 7), "thickness", &c->thickness) < 0)
        return -1;
    return 0;
}

PyObject* System_add_collider(SystemObject* self, PyObject* args) {
    if (mspy_require_idle(self) < 0) return NULL;
    ms_collider c;
    memset(&c, 0, sizeof c);
    if (mspy_parse_collider(args, 0, &c) < 0) return NULL;
    ms_error err;
    int64_t id = ms_add_collider(self->model, self->state, &c, &err);
    if (id < 0) return mspy_raise_ms_error(&err);
    return PyLong_FromLongLong(id);
}

/* A collider id (any int64; one that names no collider is a KeyError later). */
static int parse_id(PyObject* value, int64_t* out) {
    long long id = 0;
    if (mspy_parse_integer(value, "collider id", LLONG_MIN, LLONG_MAX, &id) < 0) return -1;
    *out = (int64_t)id;
    return 0;
}

PyObject* System_set_collider(SystemObject* self, PyObject* args) {
    if (mspy_require_idle(self) < 0) return NULL;
    if (PyTuple_GET_SIZE(args) < 1) {
        PyErr_SetString(PyExc_TypeError, "expected (id, kind, center, axis, size, velocity, restitution, friction, thickness)");
        return NULL;
    }
    ms_collider c;
    memset(&c, 0, sizeof c);
    if (parse_id(PyTuple_GET_ITEM(args, 0), &c.id) < 0 || mspy_parse_collider(args, 1, &c) < 0) return NULL;
    ms_error err;
    if (ms_set_collider(self->model, self->state, &c, &err) != MS_OK) return mspy_raise_ms_error(&err);
    Py_RETURN_NONE;
}

static PyObject* vector_tuple(const double v[3]) { return Py_BuildValue("(ddd)", v[0], v[1], v[2]); }

PyObject* System_get_collider(SystemObject* self, PyObject* id_obj) {
    if (mspy_require_ready(self) < 0) return NULL;
    int64_t id = 0;
    if (parse_id(id_obj, &id) < 0) return NULL;
    const ms_collider* c = ms_find_collider(self->model, id);
    const double* center = ms_collider_position(self->state, id);
    if (c == NULL || center == NULL) {
        PyErr_Format(PyExc_KeyError, "no collider with id %lld in this system (it was removed?)", (long long)id);
        return NULL;
    }
    return Py_BuildValue("(sNNNNddd)", ms_collider_type_name(c->type), vector_tuple(center), vector_tuple(c->axis),
                         vector_tuple(c->size), vector_tuple(c->velocity), c->restitution, c->friction, c->thickness);
}

PyObject* System_collider_start(SystemObject* self, PyObject* id_obj) {
    if (mspy_require_ready(self) < 0) return NULL;
    int64_t id = 0;
    if (parse_id(id_obj, &id) < 0) return NULL;
    const ms_collider* c = ms_find_collider(self->model, id);
    if (c == NULL) {
        PyErr_Format(PyExc_KeyError, "no collider with id %lld in this system (it was removed?)", (long long)id);
        return NULL;
    }
    return vector_tuple(c->center);
}

PyObject* System_remove_collider(SystemObject* self, PyObject* id_obj) {
    if (mspy_require_idle(self) < 0) return NULL;
    int64_t id = 0;
    if (parse_id(id_obj, &id) < 0) return NULL;
    ms_error err;
    if (ms_remove_collider(self->model, self->state, id, &err) != MS_OK) {
        PyErr_SetString(PyExc_KeyError, err.message);
        return NULL;
    }
    Py_RETURN_NONE;
}

PyObject* System_collider_ids(SystemObject* self, PyObject* Py_UNUSED(ignored)) {
    if (mspy_require_ready(self) < 0) return NULL;
    PyObject* ids = PyTuple_New((Py_ssize_t)self->model->ncollider);
    if (ids == NULL) return NULL;
    for (int64_t k = 0; k < self->model->ncollider; ++k) {
        PyObject* id = PyLong_FromLongLong(self->model->colliders[k].id);
        if (id == NULL) {
            Py_DECREF(ids);
            return NULL;
        }
        PyTuple_SET_ITEM(ids, (Py_ssize_t)k, id);
    }
    return ids;
}
