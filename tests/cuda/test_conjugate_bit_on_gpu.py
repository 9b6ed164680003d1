"""conj() views on the GPU: the bits' fallback, copies and writes take the same backend-neutral
path as on the CPU, whose results (tested against PyTorch in tests/core) are the reference."""
import numpy as np

import glasstorch as gt


def _pair():
    values = np.array([[1 + 2j, 3 - 4j], [-0.5j, 2 + 0j]])
    return gt.tensor(values), gt.tensor(values).to("cuda")


def test_conj_view_reads_and_ops_match_the_cpu():
    host, gpu = _pair()
    c = gpu.conj()
    assert c.is_conj() and c.data_ptr() == gpu.data_ptr() and c.device.type == "cuda"
    assert c.tolist() == host.conj().tolist()
    for make in (lambda x: x.conj() * 2 + 1, lambda x: x.conj().exp(), lambda x: x.mH @ x,
                 lambda x: x.conj().clone(), lambda x: x.conj().to(gt.complex64),
                 lambda x: x.conj().imag * 3):
        out = make(gpu)
        assert not out.is_conj() and not out.is_neg()
        np.testing.assert_allclose(np.array(out.cpu().tolist()), np.array(make(host).tolist()),
                                   rtol=1e-6)


def test_writes_through_a_conj_view_and_copies_across_devices():
    host, gpu = _pair()
    for x in (host, gpu):
        v = x.conj()
        v.mul_(2j)
        v[0, 0] = 5j
        x.conj().imag.add_(1)
    assert gpu.cpu().tolist() == host.tolist()
    back = gpu.conj().cpu()                      # a bit-free copy of the values
    assert not back.is_conj() and back.tolist() == host.conj().tolist()
    into = gt.zeros(2, 2, dtype=gt.complex128, device="cuda")
    into.conj().copy_(host)                      # stores the conjugate of host
    assert into.tolist() == host.conj().tolist()
