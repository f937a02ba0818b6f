/* The energy ledger's arithmetic: its two sums, adding what a step booked, and the power
   flows of the forces that it integrates. */
#include <math.h>

#include "model/model.h"

double ms_ledger_dissipated(const ms_ledger* l) {
    return l->dampers + l->drag + l->contact + l->energy_loss + l->numerical;
}

double ms_ledger_work(const ms_ledger* l) {
    return l->wind + l->external + l->pins + l->colliders + l->constraints + l->user;
}

void ms_ledger_add(ms_ledger* ledger, const ms_ledger* booked) {
    ledger->dampers += booked->dampers;
    ledger->drag += booked->drag;
    ledger->contact += booked->contact;
    ledger->energy_loss += booked->energy_loss;
    ledger->numerical += booked->numerical;
    ledger->wind += booked->wind;
    ledger->external += booked->external;
    ledger->pins += booked->pins;
    ledger->colliders += booked->colliders;
    ledger->constraints += booked->constraints;
    ledger->user += booked->user;
}

void ms_ledger_add_flow(ms_ledger* ledger, const ms_flow* flow) {
    ledger->dampers += flow->dampers;
    ledger->drag += flow->drag;
    ledger->wind += flow->wind;
    ledger->external += flow->external;
    ledger->pins += flow->pins;
}

void ms_flow_add(ms_flow* flow, const ms_flow* rate, double weight) {
    flow->dampers += weight * rate->dampers;
    flow->drag += weight * rate->drag;
    flow->wind += weight * rate->wind;
    flow->external += weight * rate->external;
    flow->pins += weight * rate->pins;
}

int ms_flow_finite(const ms_flow* flow) {
    return isfinite(flow->dampers) && isfinite(flow->drag) && isfinite(flow->wind) && isfinite(flow->external) &&
           isfinite(flow->pins);
}

int ms_ledger_finite(const ms_ledger* l) {
    return isfinite(l->dampers) && isfinite(l->drag) && isfinite(l->contact) && isfinite(l->energy_loss) &&
           isfinite(l->numerical) && isfinite(l->wind) && isfinite(l->external) && isfinite(l->pins) &&
           isfinite(l->colliders) && isfinite(l->constraints) && isfinite(l->user);
}
