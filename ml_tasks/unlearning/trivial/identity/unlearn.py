"""Trivial 'unlearning' that sets the floor: return the original model untouched (nothing is forgotten)."""


def unlearn(model, forget_x, forget_y, retain_x, retain_y, params, device):
    return model
