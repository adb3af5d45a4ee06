"""What torchvision's legacy `pretrained=True` loads, builder by builder (torchvision 0.29.1).

Read from the `@handle_legacy_interface(weights=("pretrained", ...), weights_backbone=
("pretrained_backbone", ...))` decorator of each builder in `torchvision/models/`: the key is the
builder's module under `torchvision.models` and its name; the value gives, for `weights=` and
then `weights_backbone=`, the enum member `pretrained=True` (`pretrained_backbone=True`) stands
for. `A|B`: `A` unless `quantize=True` is passed, then `B`. An empty string: no fixed member (the
member depends on another argument, or the builder has no weights and raises `ValueError`).
"""

from __future__ import annotations

LEGACY = {
    "alexnet.alexnet": ("AlexNet_Weights.IMAGENET1K_V1",),
    "convnext.convnext_tiny": ("ConvNeXt_Tiny_Weights.IMAGENET1K_V1",),
    "convnext.convnext_small": ("ConvNeXt_Small_Weights.IMAGENET1K_V1",),
    "convnext.convnext_base": ("ConvNeXt_Base_Weights.IMAGENET1K_V1",),
    "convnext.convnext_large": ("ConvNeXt_Large_Weights.IMAGENET1K_V1",),
    "densenet.densenet121": ("DenseNet121_Weights.IMAGENET1K_V1",),
    "densenet.densenet161": ("DenseNet161_Weights.IMAGENET1K_V1",),
    "densenet.densenet169": ("DenseNet169_Weights.IMAGENET1K_V1",),
    "densenet.densenet201": ("DenseNet201_Weights.IMAGENET1K_V1",),
    "detection.backbone_utils.resnet_fpn_backbone": ("",),
    "detection.backbone_utils.mobilenet_backbone": ("",),
    "detection.faster_rcnn.fasterrcnn_resnet50_fpn": (
        "FasterRCNN_ResNet50_FPN_Weights.COCO_V1",
        "ResNet50_Weights.IMAGENET1K_V1",
    ),
    "detection.faster_rcnn.fasterrcnn_resnet50_fpn_v2": (
        "FasterRCNN_ResNet50_FPN_V2_Weights.COCO_V1",
        "ResNet50_Weights.IMAGENET1K_V1",
    ),
    "detection.faster_rcnn.fasterrcnn_mobilenet_v3_large_320_fpn": (
        "FasterRCNN_MobileNet_V3_Large_320_FPN_Weights.COCO_V1",
        "MobileNet_V3_Large_Weights.IMAGENET1K_V1",
    ),
    "detection.faster_rcnn.fasterrcnn_mobilenet_v3_large_fpn": (
        "FasterRCNN_MobileNet_V3_Large_FPN_Weights.COCO_V1",
        "MobileNet_V3_Large_Weights.IMAGENET1K_V1",
    ),
    "detection.fcos.fcos_resnet50_fpn": (
        "FCOS_ResNet50_FPN_Weights.COCO_V1",
        "ResNet50_Weights.IMAGENET1K_V1",
    ),
    "detection.keypoint_rcnn.keypointrcnn_resnet50_fpn": ("", "ResNet50_Weights.IMAGENET1K_V1"),
    "detection.mask_rcnn.maskrcnn_resnet50_fpn": (
        "MaskRCNN_ResNet50_FPN_Weights.COCO_V1",
        "ResNet50_Weights.IMAGENET1K_V1",
    ),
    "detection.mask_rcnn.maskrcnn_resnet50_fpn_v2": (
        "MaskRCNN_ResNet50_FPN_V2_Weights.COCO_V1",
        "ResNet50_Weights.IMAGENET1K_V1",
    ),
    "detection.retinanet.retinanet_resnet50_fpn": (
        "RetinaNet_ResNet50_FPN_Weights.COCO_V1",
        "ResNet50_Weights.IMAGENET1K_V1",
    ),
    "detection.retinanet.retinanet_resnet50_fpn_v2": (
        "RetinaNet_ResNet50_FPN_V2_Weights.COCO_V1",
        "ResNet50_Weights.IMAGENET1K_V1",
    ),
    "detection.ssd.ssd300_vgg16": (
        "SSD300_VGG16_Weights.COCO_V1",
        "VGG16_Weights.IMAGENET1K_FEATURES",
    ),
    "detection.ssdlite.ssdlite320_mobilenet_v3_large": (
        "SSDLite320_MobileNet_V3_Large_Weights.COCO_V1",
        "MobileNet_V3_Large_Weights.IMAGENET1K_V1",
    ),
    "efficientnet.efficientnet_b0": ("EfficientNet_B0_Weights.IMAGENET1K_V1",),
    "efficientnet.efficientnet_b1": ("EfficientNet_B1_Weights.IMAGENET1K_V1",),
    "efficientnet.efficientnet_b2": ("EfficientNet_B2_Weights.IMAGENET1K_V1",),
    "efficientnet.efficientnet_b3": ("EfficientNet_B3_Weights.IMAGENET1K_V1",),
    "efficientnet.efficientnet_b4": ("EfficientNet_B4_Weights.IMAGENET1K_V1",),
    "efficientnet.efficientnet_b5": ("EfficientNet_B5_Weights.IMAGENET1K_V1",),
    "efficientnet.efficientnet_b6": ("EfficientNet_B6_Weights.IMAGENET1K_V1",),
    "efficientnet.efficientnet_b7": ("EfficientNet_B7_Weights.IMAGENET1K_V1",),
    "efficientnet.efficientnet_v2_s": ("EfficientNet_V2_S_Weights.IMAGENET1K_V1",),
    "efficientnet.efficientnet_v2_m": ("EfficientNet_V2_M_Weights.IMAGENET1K_V1",),
    "efficientnet.efficientnet_v2_l": ("EfficientNet_V2_L_Weights.IMAGENET1K_V1",),
    "googlenet.googlenet": ("GoogLeNet_Weights.IMAGENET1K_V1",),
    "inception.inception_v3": ("Inception_V3_Weights.IMAGENET1K_V1",),
    "maxvit.maxvit_t": ("MaxVit_T_Weights.IMAGENET1K_V1",),
    "mnasnet.mnasnet0_5": ("MNASNet0_5_Weights.IMAGENET1K_V1",),
    "mnasnet.mnasnet0_75": ("MNASNet0_75_Weights.IMAGENET1K_V1",),
    "mnasnet.mnasnet1_0": ("MNASNet1_0_Weights.IMAGENET1K_V1",),
    "mnasnet.mnasnet1_3": ("MNASNet1_3_Weights.IMAGENET1K_V1",),
    "mobilenetv2.mobilenet_v2": ("MobileNet_V2_Weights.IMAGENET1K_V1",),
    "mobilenetv3.mobilenet_v3_large": ("MobileNet_V3_Large_Weights.IMAGENET1K_V1",),
    "mobilenetv3.mobilenet_v3_small": ("MobileNet_V3_Small_Weights.IMAGENET1K_V1",),
    "optical_flow.raft.raft_large": ("Raft_Large_Weights.C_T_SKHT_V2",),
    "optical_flow.raft.raft_small": ("Raft_Small_Weights.C_T_V2",),
    "quantization.googlenet.googlenet": (
        "GoogLeNet_Weights.IMAGENET1K_V1|GoogLeNet_QuantizedWeights.IMAGENET1K_FBGEMM_V1",
    ),
    "quantization.inception.inception_v3": (
        "Inception_V3_Weights.IMAGENET1K_V1|Inception_V3_QuantizedWeights.IMAGENET1K_FBGEMM_V1",
    ),
    "quantization.mobilenetv2.mobilenet_v2": (
        "MobileNet_V2_Weights.IMAGENET1K_V1|MobileNet_V2_QuantizedWeights.IMAGENET1K_QNNPACK_V1",
    ),
    "quantization.mobilenetv3.mobilenet_v3_large": (
        "MobileNet_V3_Large_Weights.IMAGENET1K_V1|MobileNet_V3_Large_QuantizedWeights.IMAGENET1K_QNNPACK_V1",
    ),
    "quantization.resnet.resnet18": (
        "ResNet18_Weights.IMAGENET1K_V1|ResNet18_QuantizedWeights.IMAGENET1K_FBGEMM_V1",
    ),
    "quantization.resnet.resnet50": (
        "ResNet50_Weights.IMAGENET1K_V1|ResNet50_QuantizedWeights.IMAGENET1K_FBGEMM_V1",
    ),
    "quantization.resnet.resnext101_32x8d": (
        "ResNeXt101_32X8D_Weights.IMAGENET1K_V1|ResNeXt101_32X8D_QuantizedWeights.IMAGENET1K_FBGEMM_V1",
    ),
    "quantization.resnet.resnext101_64x4d": (
        "ResNeXt101_64X4D_Weights.IMAGENET1K_V1|ResNeXt101_64X4D_QuantizedWeights.IMAGENET1K_FBGEMM_V1",
    ),
    "quantization.shufflenetv2.shufflenet_v2_x0_5": (
        "ShuffleNet_V2_X0_5_Weights.IMAGENET1K_V1|ShuffleNet_V2_X0_5_QuantizedWeights.IMAGENET1K_FBGEMM_V1",
    ),
    "quantization.shufflenetv2.shufflenet_v2_x1_0": (
        "ShuffleNet_V2_X1_0_Weights.IMAGENET1K_V1|ShuffleNet_V2_X1_0_QuantizedWeights.IMAGENET1K_FBGEMM_V1",
    ),
    "quantization.shufflenetv2.shufflenet_v2_x1_5": (
        "ShuffleNet_V2_X1_5_Weights.IMAGENET1K_V1|ShuffleNet_V2_X1_5_QuantizedWeights.IMAGENET1K_FBGEMM_V1",
    ),
    "quantization.shufflenetv2.shufflenet_v2_x2_0": (
        "ShuffleNet_V2_X2_0_Weights.IMAGENET1K_V1|ShuffleNet_V2_X2_0_QuantizedWeights.IMAGENET1K_FBGEMM_V1",
    ),
    "regnet.regnet_y_400mf": ("RegNet_Y_400MF_Weights.IMAGENET1K_V1",),
    "regnet.regnet_y_800mf": ("RegNet_Y_800MF_Weights.IMAGENET1K_V1",),
    "regnet.regnet_y_1_6gf": ("RegNet_Y_1_6GF_Weights.IMAGENET1K_V1",),
    "regnet.regnet_y_3_2gf": ("RegNet_Y_3_2GF_Weights.IMAGENET1K_V1",),
    "regnet.regnet_y_8gf": ("RegNet_Y_8GF_Weights.IMAGENET1K_V1",),
    "regnet.regnet_y_16gf": ("RegNet_Y_16GF_Weights.IMAGENET1K_V1",),
    "regnet.regnet_y_32gf": ("RegNet_Y_32GF_Weights.IMAGENET1K_V1",),
    "regnet.regnet_y_128gf": ("",),
    "regnet.regnet_x_400mf": ("RegNet_X_400MF_Weights.IMAGENET1K_V1",),
    "regnet.regnet_x_800mf": ("RegNet_X_800MF_Weights.IMAGENET1K_V1",),
    "regnet.regnet_x_1_6gf": ("RegNet_X_1_6GF_Weights.IMAGENET1K_V1",),
    "regnet.regnet_x_3_2gf": ("RegNet_X_3_2GF_Weights.IMAGENET1K_V1",),
    "regnet.regnet_x_8gf": ("RegNet_X_8GF_Weights.IMAGENET1K_V1",),
    "regnet.regnet_x_16gf": ("RegNet_X_16GF_Weights.IMAGENET1K_V1",),
    "regnet.regnet_x_32gf": ("RegNet_X_32GF_Weights.IMAGENET1K_V1",),
    "resnet.resnet18": ("ResNet18_Weights.IMAGENET1K_V1",),
    "resnet.resnet34": ("ResNet34_Weights.IMAGENET1K_V1",),
    "resnet.resnet50": ("ResNet50_Weights.IMAGENET1K_V1",),
    "resnet.resnet101": ("ResNet101_Weights.IMAGENET1K_V1",),
    "resnet.resnet152": ("ResNet152_Weights.IMAGENET1K_V1",),
    "resnet.resnext50_32x4d": ("ResNeXt50_32X4D_Weights.IMAGENET1K_V1",),
    "resnet.resnext101_32x8d": ("ResNeXt101_32X8D_Weights.IMAGENET1K_V1",),
    "resnet.resnext101_64x4d": ("ResNeXt101_64X4D_Weights.IMAGENET1K_V1",),
    "resnet.wide_resnet50_2": ("Wide_ResNet50_2_Weights.IMAGENET1K_V1",),
    "resnet.wide_resnet101_2": ("Wide_ResNet101_2_Weights.IMAGENET1K_V1",),
    "segmentation.deeplabv3.deeplabv3_resnet50": (
        "DeepLabV3_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1",
        "ResNet50_Weights.IMAGENET1K_V1",
    ),
    "segmentation.deeplabv3.deeplabv3_resnet101": (
        "DeepLabV3_ResNet101_Weights.COCO_WITH_VOC_LABELS_V1",
        "ResNet101_Weights.IMAGENET1K_V1",
    ),
    "segmentation.deeplabv3.deeplabv3_mobilenet_v3_large": (
        "DeepLabV3_MobileNet_V3_Large_Weights.COCO_WITH_VOC_LABELS_V1",
        "MobileNet_V3_Large_Weights.IMAGENET1K_V1",
    ),
    "segmentation.fcn.fcn_resnet50": (
        "FCN_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1",
        "ResNet50_Weights.IMAGENET1K_V1",
    ),
    "segmentation.fcn.fcn_resnet101": (
        "FCN_ResNet101_Weights.COCO_WITH_VOC_LABELS_V1",
        "ResNet101_Weights.IMAGENET1K_V1",
    ),
    "segmentation.lraspp.lraspp_mobilenet_v3_large": (
        "LRASPP_MobileNet_V3_Large_Weights.COCO_WITH_VOC_LABELS_V1",
        "MobileNet_V3_Large_Weights.IMAGENET1K_V1",
    ),
    "shufflenetv2.shufflenet_v2_x0_5": ("ShuffleNet_V2_X0_5_Weights.IMAGENET1K_V1",),
    "shufflenetv2.shufflenet_v2_x1_0": ("ShuffleNet_V2_X1_0_Weights.IMAGENET1K_V1",),
    "shufflenetv2.shufflenet_v2_x1_5": ("ShuffleNet_V2_X1_5_Weights.IMAGENET1K_V1",),
    "shufflenetv2.shufflenet_v2_x2_0": ("ShuffleNet_V2_X2_0_Weights.IMAGENET1K_V1",),
    "squeezenet.squeezenet1_0": ("SqueezeNet1_0_Weights.IMAGENET1K_V1",),
    "squeezenet.squeezenet1_1": ("SqueezeNet1_1_Weights.IMAGENET1K_V1",),
    "swin_transformer.swin_t": ("Swin_T_Weights.IMAGENET1K_V1",),
    "swin_transformer.swin_s": ("Swin_S_Weights.IMAGENET1K_V1",),
    "swin_transformer.swin_b": ("Swin_B_Weights.IMAGENET1K_V1",),
    "swin_transformer.swin_v2_t": ("Swin_V2_T_Weights.IMAGENET1K_V1",),
    "swin_transformer.swin_v2_s": ("Swin_V2_S_Weights.IMAGENET1K_V1",),
    "swin_transformer.swin_v2_b": ("Swin_V2_B_Weights.IMAGENET1K_V1",),
    "vgg.vgg11": ("VGG11_Weights.IMAGENET1K_V1",),
    "vgg.vgg11_bn": ("VGG11_BN_Weights.IMAGENET1K_V1",),
    "vgg.vgg13": ("VGG13_Weights.IMAGENET1K_V1",),
    "vgg.vgg13_bn": ("VGG13_BN_Weights.IMAGENET1K_V1",),
    "vgg.vgg16": ("VGG16_Weights.IMAGENET1K_V1",),
    "vgg.vgg16_bn": ("VGG16_BN_Weights.IMAGENET1K_V1",),
    "vgg.vgg19": ("VGG19_Weights.IMAGENET1K_V1",),
    "vgg.vgg19_bn": ("VGG19_BN_Weights.IMAGENET1K_V1",),
    "video.mvit.mvit_v1_b": ("MViT_V1_B_Weights.KINETICS400_V1",),
    "video.mvit.mvit_v2_s": ("MViT_V2_S_Weights.KINETICS400_V1",),
    "video.resnet.r3d_18": ("R3D_18_Weights.KINETICS400_V1",),
    "video.resnet.mc3_18": ("MC3_18_Weights.KINETICS400_V1",),
    "video.resnet.r2plus1d_18": ("R2Plus1D_18_Weights.KINETICS400_V1",),
    "video.s3d.s3d": ("S3D_Weights.KINETICS400_V1",),
    "video.swin_transformer.swin3d_t": ("Swin3D_T_Weights.KINETICS400_V1",),
    "video.swin_transformer.swin3d_s": ("Swin3D_S_Weights.KINETICS400_V1",),
    "video.swin_transformer.swin3d_b": ("Swin3D_B_Weights.KINETICS400_V1",),
    "vision_transformer.vit_b_16": ("ViT_B_16_Weights.IMAGENET1K_V1",),
    "vision_transformer.vit_b_32": ("ViT_B_32_Weights.IMAGENET1K_V1",),
    "vision_transformer.vit_l_16": ("ViT_L_16_Weights.IMAGENET1K_V1",),
    "vision_transformer.vit_l_32": ("ViT_L_32_Weights.IMAGENET1K_V1",),
    "vision_transformer.vit_h_14": ("",),
}

# Builders of these subpackages are exported by the subpackage (`torchvision.models.detection.
# fasterrcnn_resnet50_fpn`); the others by `torchvision.models` itself.
SUBPACKAGES = ("detection", "optical_flow", "quantization", "segmentation", "video")
PARAMETERS = (("pretrained", "weights"), ("pretrained_backbone", "weights_backbone"))


def _index() -> dict[str, tuple[str, ...]]:
    index = {}
    for path, members in LEGACY.items():
        module, _, name = path.rpartition(".")
        top = module.split(".")[0]
        package = f"torchvision.models.{top}" if top in SUBPACKAGES else "torchvision.models"
        index[f"torchvision.models.{module}.{name}"] = members
        index[f"{package}.{name}"] = members
    return index


BUILDERS = _index()
NAMES = frozenset(path.rpartition(".")[2] for path in LEGACY)
