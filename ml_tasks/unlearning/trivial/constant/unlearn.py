"""Trivial 'unlearning' for the floor check: zero every weight, so the model outputs a constant."""

import torch


def unlearn(model, forget_x, forget_y, retain_x, retain_y, params, device):
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    return model
