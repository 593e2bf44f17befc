import { ApiProperty } from '@nestjs/swagger';

export class ReadinessDto {
  @ApiProperty({ example: 'ok' }) status!: string;
  @ApiProperty({ example: { database: 'ok' }, description: 'Each dependency checked and its state' }) checks!: Record<string, string>;
}
