// The unit that batchscope_torch_pch compiles: its precompiled header (torch/torch.h) is the one the
// targets that read LibTorch share (CMakeLists.txt, BATCHSCOPE_PCH).
