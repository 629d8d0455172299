"""A small PyTorch training run with the cudaMallocAsync backend, for traces: a convolutional
network trained on synthetic images for a few hundred steps with a batch size that changes every
epoch (so blocks of many sizes are allocated, freed and reused), an evaluation pass without
gradients, and empty_cache() at the end. Prints the loss per epoch."""
import os

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def model(device):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64 * 8 * 8, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10),
    ).to(device)


def main():
    device = torch.device("cuda")
    net = model(device)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
    generator = torch.Generator(device=device).manual_seed(1)
    steps = int(os.environ.get("TRAIN_STEPS", "60"))
    for epoch, batch in enumerate((64, 256, 128, 512, 96)):
        total = 0.0
        for _ in range(steps):
            images = torch.randn(batch, 3, 32, 32, device=device, generator=generator)
            labels = torch.randint(0, 10, (batch,), device=device, generator=generator)
            loss = F.cross_entropy(net(images), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch} batch {batch} loss {total / steps:.3f}")
    with torch.no_grad():
        correct = 0
        for _ in range(20):
            images = torch.randn(1024, 3, 32, 32, device=device, generator=generator)
            correct += int((net(images).argmax(1) >= 0).sum())
    print(f"evaluated {correct} images")
    stats = torch.cuda.memory_stats()
    print(f"peak allocated {stats.get('allocated_bytes.all.peak', 0)} bytes")
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
